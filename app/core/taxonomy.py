"""The paper's benchmark taxonomy: 94 scored sub-benchmarks in 9 categories.

The data lives in ``taxonomy.yaml`` beside this module (read once, cached). This module is pure:
its only I/O is reading that file. It answers four questions about a benchmark name as it appears
in any source (lm-eval-harness, lighteval, a generic table):

- what is its canonical name (``canonical_name``), e.g. ``leaderboard_bbh_navigate`` ->
  ``bbh:navigate``, ``leaderboard|mmlu:world_religions|5`` -> ``mmlu:world_religions``;
- which category does it belong to (``category_for``);
- how many options does it usually have (``usual_num_choices``; ``None`` = unknown or varies per
  question: take k from the options actually shown for each sample);
- is it a scored benchmark (``is_scored``): one of the paper's, or of a leaderboard's.

Beside the paper's suite it knows the Open LLM Leaderboards' (v1: lighteval's
``harness|<task>|<shots>``, v2: lm-eval's ``leaderboard_<task>``): the tasks they share with the
paper's suite are its entries (``harness|hendrycksTest-anatomy|5`` -> ``mmlu:anatomy``), and the
ones it lacks (``winogrande``, ``gsm8k``, ``mmlu_pro``, ``gpqa:main``, ``math_hard:algebra``, ...)
have entries of their own: ``lookup`` and ``category_for`` know them, so a map counts them, while
``scored_benchmarks`` stays the paper's 94 (what the suite commands and the workers load).
``suite_benchmarks`` lists a leaderboard's tasks.

Canonicalization is conservative: a name maps only to a canonical name that exists in the
taxonomy, through an explicit table of known spellings. Anything else (``mmlu_redux``,
``bbh_foo_unknown``) comes back unchanged, only stripped of surrounding whitespace.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "CATEGORIES",
    "NOT_SCORED",
    "UNCATEGORIZED",
    "BenchmarkInfo",
    "canonical_name",
    "category_for",
    "is_scored",
    "lookup",
    "not_scored_benchmarks",
    "scored_benchmarks",
    "suite_benchmarks",
    "suites",
    "usual_num_choices",
]

CATEGORIES: tuple[str, ...] = (
    "Commonsense",
    "Culture",
    "Logic",
    "Knowledge/QA",
    "Language",
    "Liberal Arts",
    "Math",
    "Safety/Truth",
    "Science/Tech",
)
"""The paper's categories, in display order."""

UNCATEGORIZED = "Uncategorized"
"""Category of a benchmark the taxonomy does not know and whose source gave no category."""

NOT_SCORED = "Not scored"
"""Category of the tasks the paper ran but did not score (``bbh:dyck_languages``, ``ifeval``, ...):
shown as a column of their own, kept out of category means and Total."""

_TAXONOMY_FILE = Path(__file__).parent / "taxonomy.yaml"

# lm-eval-harness MMLU task variants: mmlu_<subject>, mmlu_flan_cot_zeroshot_<subject>, ...,
# mmlu_<subject>_generative.
_MMLU_PREFIXES = (
    "",
    "flan_cot_zeroshot_",
    "flan_cot_fewshot_",
    "flan_n_shot_generative_",
    "flan_n_shot_loglikelihood_",
    "continuation_",
)
_MMLU_SUFFIXES = ("", "_generative")
# lm-eval-harness BBH task variants: bbh_<task>, bbh_cot_fewshot_<task>, ...
_BBH_PREFIXES = ("", "cot_fewshot_", "cot_zeroshot_", "fewshot_", "zeroshot_")
# lm-eval-harness GPQA task variants: gpqa_diamond_zeroshot, gpqa_diamond_cot_n_shot, ...
_GPQA_SUFFIXES = ("", "_zeroshot", "_n_shot", "_cot_zeroshot", "_cot_n_shot", "_generative_n_shot")
# lm-eval-harness wraps the Open LLM Leaderboard v2 tasks as leaderboard_<task>.
_LEADERBOARD_PREFIX = "leaderboard_"


@dataclass(frozen=True)
class BenchmarkMeta:
    """What the store keeps of a benchmark: its category and usual option count (None: varies
    or generative). Settled per import by ``forgetmap.importers.common.prepare``."""

    category: str
    num_choices: int | None


@dataclass(frozen=True)
class BenchmarkInfo:
    """One scored sub-benchmark of the taxonomy.

    Attributes:
        name: canonical name, e.g. ``mmlu:anatomy``, ``bbh:navigate``, ``piqa``.
        category: one of ``CATEGORIES``.
        num_choices: usual number of options; ``None`` when it varies per question.
        source: Hugging Face dataset id the paper used, or ``None`` if not known.
        subsets: the dataset configs the benchmark pools, where the paper named none and we
            chose (MCTest: ``mc160`` and ``mc500``); empty when the loader's config is implied.
        paper: one of the paper's suite (``scored_benchmarks``); False for a task only the Open
            LLM Leaderboards ran (``gsm8k``, ``mmlu_pro``, ...).
    """

    name: str
    category: str
    num_choices: int | None
    source: str | None
    subsets: tuple[str, ...] = ()
    paper: bool = True


@dataclass(frozen=True)
class _Taxonomy:
    """The parsed YAML: the paper's scored benchmarks in order, every known benchmark by name
    (the leaderboards' too), the spelling -> canonical-name table, and the leaderboards' suites."""

    scored: tuple[BenchmarkInfo, ...]
    by_name: MappingProxyType[str, BenchmarkInfo]
    not_scored: tuple[str, ...]
    spellings: MappingProxyType[str, str]
    suites: MappingProxyType[str, tuple[str, ...]]


def _spellings_of(name: str) -> set[str]:
    """Every lower-case spelling that lm-eval-harness or lighteval uses for a canonical name."""
    name = name.lower()
    out = {name}
    family, sep, task = name.partition(":")
    if not sep:
        return out
    out.add(f"{family}_{task}")
    if family == "mmlu":
        out.update(f"mmlu_{p}{task}{s}" for p in _MMLU_PREFIXES for s in _MMLU_SUFFIXES)
        # lm-eval before 0.4 and the Open LLM Leaderboard v1: hendrycksTest-<subject>
        out.add(f"hendryckstest-{task}")
    elif family == "bbh":
        out.update(f"bbh_{p}{task}" for p in _BBH_PREFIXES)
        out.add(f"bigbench_hard:{task}")  # lighteval >= 0.10
    elif family == "gpqa":
        out.update(f"gpqa_{task}{s}" for s in _GPQA_SUFFIXES)
    elif family == "arc":
        out.add(f"arc_{task}_chat")
    elif family == "salad_bench":
        out.update({f"saladbench:{task}", f"saladbench_{task}"})
    return out


def _check_k(value: Any, name: str) -> int | None:
    """Validate a YAML ``k``: an integer >= 2, or null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"taxonomy.yaml: {name}: k must be an integer >= 2 or null, got {value!r}")
    return value


def _parse(data: dict[str, Any]) -> _Taxonomy:
    """Build the taxonomy from the loaded YAML document, checking it for consistency."""
    cats = data.get("categories") or []
    names = tuple(str(c["name"]) for c in cats)
    if names != CATEGORIES:
        raise ValueError(f"taxonomy.yaml: categories {names} differ from CATEGORIES {CATEGORIES}")

    spellings: dict[str, str] = {}

    def register(canonical: str, aliases: list[str]) -> None:
        for variant in [canonical, *aliases]:
            for spelling in _spellings_of(variant):
                other = spellings.setdefault(spelling, canonical)
                if other != canonical:
                    raise ValueError(
                        f"taxonomy.yaml: spelling {spelling!r} matches both {other!r} "
                        f"and {canonical!r}"
                    )

    scored: list[BenchmarkInfo] = []
    by_name: dict[str, BenchmarkInfo] = {}
    for cat in cats:
        for entry in cat.get("benchmarks") or []:
            name = str(entry["name"]).strip().lower()
            if name in by_name:
                raise ValueError(f"taxonomy.yaml: {name} is listed twice")
            source = entry.get("source")
            info = BenchmarkInfo(
                name=name,
                category=str(cat["name"]),
                num_choices=_check_k(entry.get("k"), name),
                source=None if source is None else str(source),
                subsets=tuple(str(x) for x in entry.get("subsets") or ()),
            )
            scored.append(info)
            by_name[name] = info
            register(name, [str(a) for a in entry.get("aliases") or []])

    not_scored: list[str] = []
    for entry in data.get("not_scored") or []:
        name = str(entry["name"] if isinstance(entry, dict) else entry).strip().lower()
        if name in by_name:
            raise ValueError(f"taxonomy.yaml: {name} is both scored and not scored")
        aliases = (entry.get("aliases") or []) if isinstance(entry, dict) else []
        not_scored.append(name)
        register(name, [str(a) for a in aliases])

    boards = data.get("leaderboards") or {}
    for entry in boards.get("benchmarks") or []:
        name = str(entry["name"]).strip().lower()
        if name in by_name or name in not_scored:
            raise ValueError(f"taxonomy.yaml: leaderboard benchmark {name} is listed twice")
        category = str(entry.get("category"))
        if category not in CATEGORIES:
            raise ValueError(
                f"taxonomy.yaml: {name}: category {category!r} is not one of CATEGORIES"
            )
        source = entry.get("source")
        by_name[name] = BenchmarkInfo(
            name=name,
            category=category,
            num_choices=_check_k(entry.get("k"), name),
            source=None if source is None else str(source),
            paper=False,
        )
        register(name, [str(a) for a in entry.get("aliases") or []])
    suites = {
        str(suite): _suite_members(str(suite), members, by_name, not_scored)
        for suite, members in (boards.get("suites") or {}).items()
    }

    return _Taxonomy(
        scored=tuple(scored),
        by_name=MappingProxyType(by_name),
        not_scored=tuple(not_scored),
        spellings=MappingProxyType(spellings),
        suites=MappingProxyType(suites),
    )


def _suite_members(
    suite: str, members: list[Any], by_name: dict[str, BenchmarkInfo], not_scored: list[str]
) -> tuple[str, ...]:
    """A suite's canonical names, in YAML order: ``family:*`` stands for every scored entry of
    the family (the paper's or a leaderboard's), any other member must be a known name."""
    out: list[str] = []
    for member in members:
        member = str(member).strip().lower()
        if member.endswith(":*"):
            family = member[:-1]
            found = [name for name in by_name if name.startswith(family)]
        else:
            found = [member] if member in by_name or member in not_scored else []
        if not found:
            raise ValueError(f"taxonomy.yaml: suite {suite}: {member!r} names no benchmark")
        out.extend(name for name in found if name not in out)
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _taxonomy() -> _Taxonomy:
    """Read and parse ``taxonomy.yaml`` once (yaml is loaded here: `map` needs only constants)."""
    import yaml

    # libyaml's safe loader where PyYAML has it: the same documents, 47 -> 5 ms here
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with _TAXONOMY_FILE.open(encoding="utf-8") as fh:
        return _parse(yaml.load(fh, Loader=loader))  # noqa: S506 - a safe loader


def _resolve(key: str) -> str | None:
    """Canonical name for one lower-cased task string, or None if it is not a known spelling."""
    spellings = _taxonomy().spellings
    if key in spellings:
        return spellings[key]
    if key.startswith(_LEADERBOARD_PREFIX):
        return spellings.get(key[len(_LEADERBOARD_PREFIX) :])
    paper = _paper_task(key)
    return None if paper is None else spellings.get(paper)


# The paper's own lighteval task names (its release's config/tasks lists): a family with one of
# these suffixes, then ":subset" (``main`` for one-subset datasets), e.g.
# ``bbh_reasoning_letter:navigate``, ``arc_reasoning_custom_prompt_letter:easy``,
# ``piqa_reasoning_letter:main``, ``ifeval_reasoning``. Longest first: the paper's own analysis
# stripped them shortest-first and so turned ARC's name into one it no longer recognized.
_PAPER_SUFFIXES = (
    "_reasoning_custom_prompt_letter",
    "_custom_prompt_letter",
    "_reasoning_letter",
    "_reasoning",
    "_custom",
)


def _paper_task(key: str) -> str | None:
    """``family:subset`` (or ``family`` for ``main``) of a paper task name; None if it is not
    one."""
    family, sep, subset = key.partition(":")
    for suffix in _PAPER_SUFFIXES:
        if family.endswith(suffix) and len(family) > len(suffix):
            family = family[: -len(suffix)]
            if not sep or subset == "main":
                return family
            return f"{family}:{subset}"
    return None


@functools.lru_cache(maxsize=4096)
def canonical_name(raw: str) -> str:
    """Canonical taxonomy name for a benchmark name from lm-eval-harness, lighteval or a table.

    Case-insensitive. Understands lighteval task strings (``suite|task|fewshot`` and
    ``suite|task``, e.g. ``leaderboard|mmlu:world_religions|5`` -> ``mmlu:world_religions``),
    lm-eval task names (``mmlu_world_religions``, ``mmlu_flan_cot_zeroshot_anatomy``,
    ``bbh_cot_fewshot_navigate``, ``leaderboard_bbh_navigate``, ``arc_easy``,
    ``leaderboard_musr_murder_mysteries``, ``truthfulqa_mc1``, ``gpqa_diamond_zeroshot``,
    ``siqa`` ...) and the canonical names themselves. The not-scored tasks of the taxonomy
    (``bbh_dyck_languages`` -> ``bbh:dyck_languages``, ``leaderboard_ifeval`` -> ``ifeval``) are
    canonicalized too.

    A name that is not a known spelling of a taxonomy benchmark is returned as ``raw.strip()``,
    unchanged otherwise: ``mmlu_redux`` stays ``mmlu_redux``, never ``mmlu``.
    """
    stripped = raw.strip()
    key = stripped.lower()
    if "|" in key:
        parts = [p.strip() for p in key.split("|")]
        # suite|task|fewshot[|truncate] or suite|task; also tolerate task|fewshot
        candidates = [parts[1], parts[0]] if len(parts) >= 2 else parts
        for candidate in candidates:
            found = _resolve(candidate)
            if found is not None:
                return found
        return stripped
    found = _resolve(key)
    return stripped if found is None else found


def lookup(name: str) -> BenchmarkInfo | None:
    """The scored benchmark a name refers to (canonicalized first): one of the paper's suite or a
    leaderboard's (``BenchmarkInfo.paper`` tells which); None if it is not scored."""
    return _taxonomy().by_name.get(canonical_name(name))


def usual_num_choices(name: str) -> int | None:
    """The fixed option count k of a known scored benchmark; None if unknown or varying."""
    info = lookup(name)
    return None if info is None else info.num_choices


def category_for(name: str, given: str | None) -> str:
    """Category of a benchmark: the taxonomy's when it knows the benchmark.

    ``NOT_SCORED`` for the tasks the paper ran but did not score. Otherwise the category the
    source gave (stripped) if non-empty, else ``UNCATEGORIZED``.
    """
    info = lookup(name)
    if info is not None:
        return info.category
    if canonical_name(name).lower() in not_scored_benchmarks():
        return NOT_SCORED
    if given is not None and given.strip():
        return given.strip()
    return UNCATEGORIZED


def scored_benchmarks() -> tuple[BenchmarkInfo, ...]:
    """The paper's scored benchmarks, in YAML order (category by category, in display order)."""
    return _taxonomy().scored


def suites() -> tuple[str, ...]:
    """The names of the leaderboards' suites (``open_llm_leaderboard_v1``, ``..._v2``)."""
    return tuple(_taxonomy().suites)


def suite_benchmarks(suite: str) -> tuple[str, ...]:
    """A leaderboard suite's tasks as canonical names; KeyError for a suite the taxonomy lacks."""
    return _taxonomy().suites[suite]


def is_scored(name: str) -> bool:
    """Whether a name (any known spelling) is a scored benchmark: the paper's or a leaderboard's."""
    return lookup(name) is not None


def not_scored_benchmarks() -> tuple[str, ...]:
    """Canonical names of tasks the paper ran but did not score (``bbh:dyck_languages``, ...)."""
    return _taxonomy().not_scored
