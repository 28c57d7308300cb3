"""The HTML forms read into the typed bodies of app/contract: the submission form (a pair, or a
training run), a pair's recoverability, probe and merge forms. Each parser returns (body, {}) or
(None, {field: message}), the messages shown beside the form's fields."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request
from forgetmap.contract.base import problems, validated
from forgetmap.contract.jobs import EvaluateJobIn, ModelIn, Prompting, SeriesJobIn
from forgetmap.contract.merge import MergeJobIn
from forgetmap.contract.probe import MAX_PROBE_ITEMS, PROBE_CAUSES, ProbeJobIn, ProbeOptionsIn
from forgetmap.contract.recovery import MAX_TABLE_DOCS, CorpusIn, RecoverJobIn, RecoveryOptionsIn
from forgetmap.core.errors import InputError
from forgetmap.core.stages import Stage
from forgetmap.core.taxonomy import lookup, scored_benchmarks
from forgetmap.runtime.paths import ModelRules
from pydantic import ValidationError


def model_rules(request: Request) -> ModelRules:
    """Where this app takes models from (FORGETMAP_MODEL_ROOTS, FORGETMAP_ALLOW_HUB_MODELS): the
    one check of the form, every kind of ``POST /api/jobs`` and ``POST /api/checkpoints``."""
    return ModelRules.of(request.app.state.settings)


def local_benchmarks(request: Request) -> list[str]:
    settings = request.app.state.settings
    names: set[str] = set()
    for folder in settings.benchmark_dirs:
        if Path(folder).is_dir():
            names.update(p.name for p in Path(folder).glob("*.jsonl"))
    return sorted(names)


def _number(values: dict, errors: dict, name: str, cast, low, high, what: str):
    try:
        value = cast(values.get(name, ""))
    except ValueError:
        errors[name] = f"{what} must be a number"
        return None
    if not low <= value <= high:
        errors[name] = f"{what} must be between {low} and {high}"
        return None
    return value


# where the form shows a problem the boundary found at a location of the job's JSON form
SIDES = ("base", "post")


def _form_field(loc: tuple) -> str:
    """The form field of a location in EvaluateJobIn, e.g. ("models", 0, "path") -> base_path."""
    match loc:
        case ("models", int(i), str(name), *_) if i < len(SIDES):
            return f"{SIDES[i]}_{name}"
        case ("config", str(name), *_):
            return name
        case ("pairs", _, str(name), *_):
            return name
        case ("benchmarks", *_):
            return "suite"
        case ("seeds", *_):
            return "seeds"
        case ("adaptive", *_):
            return "adaptive_target"
    return "form"


def _benchmarks(request: Request, values: dict, form, errors: dict) -> list[str]:
    """The benchmarks of the form's suite choice (problems go to ``errors["suite"]``)."""
    suite = values.get("suite", "paper")
    if suite == "paper":
        return [b.name for b in scored_benchmarks()]
    if suite == "categories":
        chosen = form.getlist("categories")
        benchmarks = [b.name for b in scored_benchmarks() if b.category in chosen]
        if not benchmarks:
            errors["suite"] = "choose at least one category"
        return benchmarks
    if suite == "benchmarks":
        benchmarks = [
            b.strip()
            for b in (values.get("benchmarks") or "").replace(",", "\n").splitlines()
            if b.strip()
        ]
        # the workers load the paper's benchmarks (the leaderboards' are known only for imports)
        unknown = [b for b in benchmarks if (info := lookup(b)) is None or not info.paper]
        if not benchmarks:
            errors["suite"] = "list at least one benchmark"
        elif unknown:
            errors["suite"] = (
                f"unknown benchmark{'s' if len(unknown) > 1 else ''}: {', '.join(unknown[:5])}"
            )
        return benchmarks
    if suite == "local":
        available = set(local_benchmarks(request))
        chosen = form.getlist("local")
        benchmarks = [f"local:{name}" for name in chosen if name in available]
        if not benchmarks:
            errors["suite"] = (
                "choose at least one local benchmark (files in FORGETMAP_BENCHMARK_DIRS)"
            )
        return benchmarks
    errors["suite"] = "choose a suite"
    return []


def _model(request: Request, values: dict, side: str, errors: dict) -> dict:
    """One side's model as the boundary takes it, its path as the worker will load it
    (forgetmap.runtime.paths); a path outside the roots is an error."""
    path = checked = (values.get(f"{side}_path") or "").strip()
    if not path:
        errors[f"{side}_path"] = (
            "give a Hugging Face id (org/name) or a local path under the model roots"
        )
    else:
        try:
            checked = model_rules(request).check(path)
        except InputError as exc:
            errors[f"{side}_path"] = str(exc)
    name = (values.get(f"{side}_name") or "").strip() or path.rstrip("/").split("/")[-1]
    revision = (values.get(f"{side}_revision") or "").strip() or None
    prompting = values.get(f"{side}_prompting") or Prompting.chat
    return {"name": name, "path": checked, "revision": revision, "prompting": prompting}


def parse_submission(request: Request, values: dict, form) -> tuple[EvaluateJobIn | None, dict]:
    """Validate the form (a pair) through the boundary (forgetmap.contract.jobs.EvaluateJobIn, the
    API's body); returns (request, {}) or (None, {field: message})."""
    errors: dict[str, str] = {}
    models = [_model(request, values, side, errors) for side in SIDES]
    if models[0]["name"] and models[0]["name"] == models[1]["name"]:
        errors["post_name"] = "the two models need different names"
    benchmarks = _benchmarks(request, values, form, errors)
    seeds = _number(values, errors, "seeds", int, 1, 10, "seeds")  # how many: seeds 0 .. n-1
    label = (values.get("label") or "").strip() or f"{models[0]['name']} → {models[1]['name']}"
    data = {
        "models": models,
        "benchmarks": benchmarks,
        "seeds": list(range(seeds or 1)),
        "config": {
            k: values.get(k) for k in ("engine", "mode", "temperature", "top_p", "max_tokens")
        },
        "pairs": [
            {
                "base": models[0]["name"],
                "post": models[1]["name"],
                "label": label,
                "stage": values.get("stage") or Stage.other,
            }
        ],
    }
    if values.get("adaptive"):  # the checkbox; the other settings keep their defaults
        data["adaptive"] = {"target_points": values.get("adaptive_target")}
    try:
        body = EvaluateJobIn.model_validate(data, strict=False)  # form values are all text
    except ValidationError as exc:
        for loc, message in problems(exc):
            errors.setdefault(_form_field(loc), message)
        return None, errors
    if errors:
        return None, errors
    return body, {}


def parse_series_submission(
    request: Request, values: dict, form
) -> tuple[SeriesJobIn | None, dict]:
    """Validate the form (a training run: a base plus checkpoint folders or globs, one per line)
    through the boundary (forgetmap.contract.jobs.SeriesJobIn, the body of ``POST /api/jobs`` with
    ``"kind": "series"``); returns (body, {}) or (None, {field: message})."""
    errors: dict[str, str] = {}
    base = _model(request, values, "base", errors)
    checkpoints = [c.strip() for c in (values.get("checkpoints") or "").splitlines() if c.strip()]
    if not checkpoints:
        errors["checkpoints"] = (
            "list the checkpoint folders, or a glob such as /runs/sft/checkpoint-*"
        )
    benchmarks = _benchmarks(request, values, form, errors)
    seeds = _number(values, errors, "seeds", int, 1, 10, "seeds")
    data = {
        "kind": "series",
        "series": (values.get("series") or "").strip(),
        "base": base["name"],
        "base_path": base["path"],
        "checkpoints": checkpoints,
        "benchmarks": benchmarks,
        "seeds": list(range(seeds or 1)),
        "config": {
            k: values.get(k) for k in ("engine", "mode", "temperature", "top_p", "max_tokens")
        },
        "prompting": values.get("post_prompting") or Prompting.chat,
        "base_prompting": base["prompting"],
        "stage": values.get("stage") or Stage.other,
    }
    try:
        body = SeriesJobIn.model_validate(data, strict=False)
    except ValidationError as exc:
        for loc, message in problems(exc):
            field = (
                {
                    "series": "series",
                    "checkpoints": "checkpoints",
                    "base_path": "base_path",
                    "prompting": "post_prompting",
                }.get(loc[0])
                if loc
                else None
            )
            errors.setdefault(field or _form_field(loc), message)
        return None, errors
    if errors:
        return None, errors
    return body, {}


def local_corpora(request: Request) -> list[str]:
    """Files and folders a ``local:NAME`` corpus may name (FORGETMAP_CORPUS_DIRS, else the
    benchmark folders)."""
    settings = request.app.state.settings
    names: set[str] = set()
    for folder in settings.corpus_dirs or settings.benchmark_dirs:
        if Path(folder).is_dir():
            names.update(
                p.name
                for p in Path(folder).iterdir()
                if p.is_dir() or p.suffix in (".txt", ".jsonl", ".json")
            )
    return sorted(names)


def _pair_models(request: Request, pair: dict, values: dict, errors: dict) -> dict[str, ModelIn]:
    """The pair's two models as a form gives their checkpoints (``base_path``, ``post_path``,
    optional ``*_revision``), each path checked against the model roots; a problem goes into
    ``errors`` under its field."""
    models = {}
    for side in ("base", "post"):
        path = (values.get(f"{side}_path") or "").strip()
        try:
            if not path:
                raise InputError(
                    "give a Hugging Face id (org/name) or a local path under the model roots"
                )
            path = model_rules(request).check(path)
        except InputError as exc:
            errors[f"{side}_path"] = str(exc)
            continue
        revision = (values.get(f"{side}_revision") or "").strip() or None
        models[side] = ModelIn(name=pair[side], path=path, revision=revision)
    return models


def parse_recovery(request: Request, pair: dict, values: dict) -> tuple[RecoverJobIn | None, dict]:
    """Validate the recoverability form; returns (request, {}) or (None, {field: message})."""
    errors: dict[str, str] = {}
    models = _pair_models(request, pair, values, errors)
    if values.get("corpus_kind") == "hf":
        hf_id = (values.get("hf_id") or "").strip()
        source = f"hf:{hf_id}"
    else:
        name = values.get("local_corpus") or ""
        source = f"local:{name}"
        if name not in local_corpora(request):
            errors["corpus"] = "choose a local corpus (files or folders in FORGETMAP_CORPUS_DIRS)"
    max_docs = _number(values, errors, "max_docs", int, 3, MAX_TABLE_DOCS, "documents")
    max_tokens = _number(values, errors, "max_tokens", int, 16, 32768, "max tokens")
    k = _number(values, errors, "k", int, 1, 262144, "K")
    seed = _number(values, errors, "seed", int, 0, 2**31 - 1, "seed")
    if errors:
        return None, errors
    corpus = {
        "source": source,
        "text_field": (values.get("text_field") or "text").strip(),
        "separator": "\n\n" if values.get("split_paragraphs") else None,
        "max_docs": max_docs,
        "config": (values.get("hf_config") or "").strip() or None,
        "split": (values.get("hf_split") or "train").strip(),
    }
    try:
        checked = validated(CorpusIn, corpus).check()
    except InputError as exc:
        return None, {"corpus": str(exc)}
    options = RecoveryOptionsIn(max_tokens=max_tokens, k=k, seed=seed)
    return RecoverJobIn(
        kind="recover", base=models["base"], post=models["post"], corpus=checked, options=options
    ), {}


def parse_probe(request: Request, pair: dict, values: dict) -> tuple[ProbeJobIn | None, dict]:
    """Validate the probe form; returns (request, {}) or (None, {field: message})."""
    errors: dict[str, str] = {}
    models = _pair_models(request, pair, values, errors)
    max_flips = _number(values, errors, "max_flips", int, 1, MAX_PROBE_ITEMS, "flips")
    kept = _number(values, errors, "kept", int, 0, MAX_PROBE_ITEMS, "kept rows")
    seed = _number(values, errors, "seed", int, 0, 2**31 - 1, "seed")
    cause = values.get("cause") or "all"
    if cause not in PROBE_CAUSES:
        errors["cause"] = f"cause must be one of {', '.join(PROBE_CAUSES)}"
    engine = values.get("engine") or "vllm"
    if engine not in ("vllm", "transformers"):
        errors["engine"] = "engine must be vllm or transformers"
    if errors:
        return None, errors
    benchmark = (values.get("benchmark") or "").strip()
    options = {
        "cause": cause,
        "max_flips": max_flips,
        "kept": kept,
        "seed": seed,
        "engine": engine,
        **({"benchmarks": [benchmark]} if benchmark else {}),
    }
    try:
        checked = validated(ProbeOptionsIn, options)
    except InputError as exc:
        return None, {"form": str(exc)}
    body = ProbeJobIn(kind="probe", base=models["base"], post=models["post"], options=checked)
    return body, {}


def parse_merge(
    request: Request, pair: dict, values: dict, prompting: dict[str, str]
) -> tuple[MergeJobIn | None, dict]:
    """Validate the merge form (``mixes``: numbers separated by commas or spaces); returns
    (request, {}) or (None, {field: message}). ``prompting``: each side's stored prompting."""
    errors: dict[str, str] = {}
    models = _pair_models(request, pair, values, errors)
    try:
        mixes = [float(m) for m in (values.get("mixes") or "").replace(",", " ").split()]
    except ValueError:
        errors["mixes"] = "mixes are numbers from 0 to 1, e.g. 0, 0.25, 0.5, 0.75, 1"
        mixes = []
    given = {"density": values.get("density") or "0.5"}  # only TIES and DARE read it
    density = _number(given, errors, "density", float, 0.01, 1.0, "density")
    if errors:
        return None, errors
    body = {
        "kind": "merge",
        "base": {**models["base"].model_dump(mode="json"), "prompting": prompting["base"]},
        "post": {**models["post"].model_dump(mode="json"), "prompting": prompting["post"]},
        "method": values.get("method") or "linear",
        "density": density,
        "keep": values.get("keep") == "on",
        **({"mixes": mixes} if mixes else {}),
        **({"series": values["series"].strip()} if (values.get("series") or "").strip() else {}),
    }
    try:
        return validated(MergeJobIn, body).check(), {}
    except InputError as exc:
        return None, {"form": str(exc)}
