"""An import's options, checked once for every entry point: the command line (`forgetmap import`),
the upload route (``POST /api/imports``) and the "Import results" page; and the lines an import's
summary is told in, the same on a terminal and on the job page.

Which option a kind takes follows the command line: ``table`` takes ``model``; ``lm-eval`` needs
``model`` and takes ``metric``, ``filters`` and ``seed`` (default 0); ``lighteval`` takes
``model``, ``metric``, ``seed`` (default: each run's own) and ``latest``; ``eee`` takes ``model``
(default: each line's own) and ``evaluation_result_id``; ``inspect`` takes ``model`` (default:
each log's own) and ``scorer``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from forgetmap.contract.limits import seed_problem
from forgetmap.core.errors import InputError

if TYPE_CHECKING:  # the store's summary type; the contract does not import the store
    from forgetmap.db.ingest import IngestSummary

KINDS = ("table", "lm-eval", "lighteval", "inspect", "eee")
IMPORT_JOB_KIND = "import"  # the kind of a job that imports an upload (``jobs.kind``)
TAKES = {
    "table": ("model",),
    "lm-eval": ("model", "metric", "filters", "seed"),
    "lighteval": ("model", "metric", "seed", "latest"),
    "inspect": ("model", "scorer"),
    "eee": ("model", "evaluation_result_id"),
}
OPTION_FLAGS = {
    "model": "--model",
    "metric": "--metric",
    "filters": "--filter",
    "seed": "--seed",
    "latest": "--latest",
    "evaluation_result_id": "--evaluation-result-id",
    "scorer": "--scorer",
}
MAX_NAME = 200


@dataclass(frozen=True)
class ImportOptions:
    """What one import reads its files with; built by :func:`import_options` only."""

    kind: str
    model: str | None = None
    metric: str | None = None
    filters: tuple[str, ...] = ()
    seed: int | None = None
    latest: bool = False
    evaluation_result_id: str | None = None
    scorer: str | None = None

    def importer_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``forgetmap.importers.import_file`` these options mean."""
        kwargs = {
            "model": self.model,
            "metric": self.metric,
            "filter_name": list(self.filters) or None,
            "seed": self.seed,
            "latest": self.latest,
        }
        if self.evaluation_result_id is not None:  # eee's alone
            kwargs["evaluation_result_id"] = self.evaluation_result_id
        if self.scorer is not None:  # inspect's alone
            kwargs["scorer"] = self.scorer
        return kwargs

    def as_query(self) -> list[tuple[str, str]]:
        """The options as the upload route's query parameters (``filter`` repeated)."""
        query = [("kind", self.kind)]
        for name, value in (("model", self.model), ("metric", self.metric), ("seed", self.seed)):
            if value is not None:
                query.append((name, str(value)))
        query += [("filter", f) for f in self.filters]
        if self.latest:
            query.append(("latest", "true"))
        if self.evaluation_result_id is not None:
            query.append(("evaluation_result_id", self.evaluation_result_id))
        if self.scorer is not None:
            query.append(("scorer", self.scorer))
        return query

    def described(self) -> dict[str, Any]:
        """The options a job page shows (those given)."""
        given = {
            "model": self.model,
            "metric": self.metric,
            "filters": list(self.filters) or None,
            "seed": self.seed,
            "latest": self.latest or None,
            "evaluation_result_id": self.evaluation_result_id,
            "scorer": self.scorer,
        }
        return {k: v for k, v in given.items() if v is not None}


def _name(flag: str, value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    if len(value) > MAX_NAME or any(ord(c) < 32 for c in value):
        raise InputError(f"{flag} must be at most {MAX_NAME} printable characters")
    return value


def import_options(
    kind: str,
    *,
    model: str | None = None,
    metric: str | None = None,
    filters: Iterable[str] = (),
    seed: int | None = None,
    latest: bool = False,
    evaluation_result_id: str | None = None,
    scorer: str | None = None,
) -> ImportOptions:
    """The options of one import, checked: an InputError in the command line's words for a kind
    that does not exist, an option the kind does not take, or a value out of range. Empty texts
    count as not given. (What a ``--filter`` says is the lm-eval reader's to check:
    ``forgetmap.importers.lm_eval.reader.parse_filter_options``.)"""
    if kind not in KINDS:
        raise InputError(f"unknown import kind {kind!r}; use one of {', '.join(KINDS)}")
    filters = tuple(f for f in filters if f and f.strip())
    given: dict[str, Any]
    given = {
        "model": _name("--model", model),
        "metric": _name("--metric", metric),
        "filters": filters,
        "seed": seed,
        "latest": latest,
        "evaluation_result_id": _name("--evaluation-result-id", evaluation_result_id),
        "scorer": _name("--scorer", scorer),
    }
    for option, value in given.items():
        if value not in (None, (), False) and option not in TAKES[kind]:
            takers = [k for k in KINDS if option in TAKES[k]]
            raise InputError(
                f"import {kind} takes no {OPTION_FLAGS[option]} (only {' and '.join(takers)})"
            )
    if kind == "lm-eval" and given["model"] is None:
        raise InputError(f"import {kind} needs --model NAME (the files do not name the model)")
    if any(len(f) > MAX_NAME for f in filters):
        raise InputError(f"--filter values must be at most {MAX_NAME} characters")
    if seed is not None and (problem := seed_problem(seed, "--seed")):
        raise InputError(problem)
    if kind == "lm-eval" and seed is None:
        seed = 0  # one run per file: seed 0 unless told
    return ImportOptions(
        kind,
        given["model"],
        given["metric"],
        filters,
        seed,
        latest,
        given["evaluation_result_id"],
        scorer=given["scorer"],
    )


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """What an import tells when it is done: rows added and kept, models, benchmarks, each
    refreshed pair's samples that do not pair, and each benchmark whose category it changed with
    the pairs that moves. ``summary`` as :func:`summary_of` makes it."""
    lines = [
        f"imported {summary['rows_added']:,} new rows ({summary['rows_unchanged']:,} already "
        f"stored) for {', '.join(summary['models'])} on {len(summary['benchmarks'])} benchmarks"
    ]
    for pair_id, counts in summary["unpaired"].items():
        if any(counts.values()):
            lines.append(
                f"pair {pair_id}: {counts['only_base']} samples only in base, "
                f"{counts['only_post']} only in post, {counts['ambiguous']} ambiguous, "
                f"{counts['mismatched']} with mismatched documents (excluded, not dropped "
                f"silently; `forgetmap pair add` shows them per benchmark)"
            )
    for change in summary.get("category_changes", ()):
        pairs = change["pairs"]
        moved = (
            f"the numbers of pair{'s' if len(pairs) > 1 else ''} "
            f"{', '.join(map(str, pairs))} move with it"
            if pairs
            else "no stored pair holds it yet"
        )
        lines.append(
            f"benchmark {change['benchmark']}: category {change['old']} -> {change['new']}; "
            f"{moved} (the history: GET /api/benchmarks/category-changes)"
        )
    return lines


def filter_notice(task: str, taken: str, filters: list[str], why: str) -> str:
    """The line an lm-eval import tells of a task scored with several filters: which it took."""
    return f"{task}: filters {', '.join(filters)}; took {taken} ({why})"


def summary_of(ingest_summary: IngestSummary) -> dict[str, Any]:
    """An ``forgetmap.db.ingest.IngestSummary`` as JSON (pair ids as text, as JSON keys are)."""
    return {
        "rows_added": ingest_summary.rows_added,
        "rows_unchanged": ingest_summary.rows_unchanged,
        "models": list(ingest_summary.models),
        "benchmarks": list(ingest_summary.benchmarks),
        "unpaired": {str(k): dict(v) for k, v in ingest_summary.unpaired.items()},
        "category_changes": [dict(c) for c in ingest_summary.category_changes],
    }
