"""``forgetmap rescore``: the stored answers graded again by another extractor, kept as a named
score set beside the harness's own scores (which are never changed).

Harness extractors differ enough to move a score from 80% to 2% (issue 51): a rescoring shows
how much of a pair's forgetting is the extractor's. One call reads the stored results of the
chosen models and benchmarks in batches of ``BATCH_ROWS`` (long answers from their files beside
the database, ``forgetmap.db.texts``), runs the extractor (``forgetmap.core.extractors``) on each
response and writes every graded row to the set, all in one transaction: a failure leaves no
set, and a set of the same name is written again only with ``replace``.

A row is graded when it has a response (a log-likelihood choice's scores are not one), the
extractor scores its kind (``lenient``: multiple choice; ``math``: generative; a user extractor:
both) and it has a gold the extractor can read; the others are counted as skipped, by reason. An
answer the extractor finds nothing in is ``no_answer``, or ``truncated`` where the harness said the
answer was cut off, or ``refused`` where its text declines (``refines_to_refused``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
from forgetmap.core.answer_status import NO_ANSWER, REFUSED, TRUNCATED, refines_to_refused
from forgetmap.core.errors import InputError
from forgetmap.core.extractors import Extracted, Extractor, is_loglikelihood
from forgetmap.core.extractors import extractor as named_extractor
from forgetmap.core.taxonomy import canonical_name
from forgetmap.db import Store
from forgetmap.db import scores as scores_db
from forgetmap.db.store import Connection
from forgetmap.db.texts import MISSING, read_texts

BATCH_ROWS = 4096
"""Stored answers read, graded and written at a time: what memory holds of them."""
NAME_MAX_CHARS = 200
SKIP_REASONS = ("other_kind", "no_response", "loglikelihood", "no_gold", "missing_file")
"""Why a row is not in the set, the first that holds: a row of a kind the extractor does not
score (multiple choice for ``math``, generative for ``lenient``); no response text; a
log-likelihood choice's scores; no gold the extractor can read; its answer's file missing beside
the database."""
_MISSING_PREFIX = MISSING.split("{", 1)[0]


@dataclass
class RescoreSummary:
    """What one rescoring wrote and why."""

    name: str
    extractor: str
    replaced: bool = False
    scored: int = 0
    changed: int = 0  # rows whose correctness differs from the harness's
    became_correct: int = 0  # 0 -> 1 against the harness
    became_wrong: int = 0  # 1 -> 0 against the harness
    no_answer: int = 0  # rows with nothing extracted (any status but answered)
    rules: Counter = field(default_factory=Counter)  # rows per rule that fired
    skipped: Counter = field(default_factory=Counter)  # rows per SKIP_REASONS


def check_name(name: str) -> str:
    text = name.strip()
    if not text or len(text) > NAME_MAX_CHARS or any(not c.isprintable() for c in text):
        raise InputError(
            f"a score set's name must be 1 to {NAME_MAX_CHARS} printable characters, got {name!r}"
        )
    return text


def rescore(
    store: Store,
    name: str,
    extractor: str | Extractor,
    models: list[str] | None = None,
    benchmarks: list[str] | None = None,
    *,
    replace: bool = False,
    batch_rows: int = BATCH_ROWS,
) -> RescoreSummary:
    """Grade the stored answers of ``models`` and ``benchmarks`` (all when None) with
    ``extractor`` (a name: ``lenient``, ``math`` or an entry point's) into the score set
    ``name``; InputError when the set exists and ``replace`` is false, or a name is unknown."""
    name = check_name(name)
    chosen = named_extractor(extractor) if isinstance(extractor, str) else extractor
    summary = RescoreSummary(name, chosen.name)
    with store.transaction() as conn:
        model_ids = _ids(conn, models, scores_db.model_id, "model")
        benchmark_ids = _ids(conn, benchmarks, _benchmark_id, "benchmark")
        existing = scores_db.score_set(conn, name)
        if existing is not None and not replace:
            raise InputError(
                f"score set {name} exists (extractor {existing[1]}); --replace writes it again"
            )
        if existing is not None:
            set_id = existing[0]
            scores_db.clear_score_set(conn, set_id, chosen.name)
            summary.replaced = True
        else:
            set_id = scores_db.create_score_set(conn, name, chosen.name)
        with store.read() as reader:  # a cursor of its own: the stream stays open while we write
            batches = scores_db.answer_batches(
                reader, model_ids=model_ids, benchmark_ids=benchmark_ids, batch_rows=batch_rows
            )
            for batch in batches:
                graded = _grade(conn, batch.to_pydict(), chosen, summary)
                if graded["model_id"]:
                    scores_db.insert_rescored(conn, set_id, rescored_table(graded))
        scores_db.finish_score_set(conn, set_id)
    return summary


def _benchmark_id(conn: Connection, name: str) -> int | None:
    found = scores_db.benchmark_id(conn, name)
    return found if found is not None else scores_db.benchmark_id(conn, canonical_name(name))


def _ids(conn: Connection, names: list[str] | None, lookup, what: str) -> list[int] | None:
    if not names:
        return None
    ids = []
    for name in names:
        found = lookup(conn, name)
        if found is None:
            raise InputError(f"no {what} named {name!r} in the database")
        ids.append(found)
    return ids


def stored_choices(text: str | None) -> list[str] | None:
    """A row's ``choices`` column (a JSON list) as the options' texts; None when it holds none."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return [str(c) for c in value] if isinstance(value, list) and value else None


def _grade(conn: Connection, rows: dict[str, list], chosen: Extractor, summary: RescoreSummary):
    """The graded rows of one batch (columns of ``scores_db.RESCORED_COLUMNS``); the summary
    counts them and the skipped ones."""
    kinds = [chosen.scores(k) for k in rows["num_choices"]]
    refs = [
        ref
        for text, ref, mine in zip(rows["response"], rows["response_ref"], kinds, strict=True)
        if mine and text is None and ref is not None
    ]
    texts = read_texts(conn, refs) if refs else {}
    out: dict[str, list] = {c: [] for c in scores_db.RESCORED_COLUMNS}
    for i in range(len(rows["model_id"])):
        response = rows["response"][i]
        if kinds[i] and response is None and rows["response_ref"][i] is not None:
            response = texts.get(rows["response_ref"][i])
            if response is not None and response.startswith(_MISSING_PREFIX):
                summary.skipped["missing_file"] += 1
                continue
        k = rows["num_choices"][i]
        reason = _skip_reason(response, k, chosen)
        if reason is None:
            key = (
                rows["model_id"][i],
                rows["benchmark_id"][i],
                rows["seed"][i],
                rows["sample_id"][i],
            )
            result = _run(
                chosen, response, stored_choices(rows["choices"][i]), rows["gold"][i], k, key
            )
            reason = "no_gold" if result is None else None
        if reason is not None:
            summary.skipped[reason] += 1
            continue
        assert result is not None  # run above: no reason to skip, and a gold
        status = result.status
        if status == NO_ANSWER:
            if rows["answer_status"][i] == TRUNCATED:
                status = TRUNCATED
            elif refines_to_refused(response):
                status = REFUSED
            summary.no_answer += 1
        summary.scored += 1
        summary.rules[result.rule or "none"] += 1
        before = bool(rows["correct"][i])
        if result.correct != before:
            summary.changed += 1
            if result.correct:
                summary.became_correct += 1
            else:
                summary.became_wrong += 1
        for column in ("model_id", "benchmark_id", "seed", "sample_id"):
            out[column].append(rows[column][i])
        out["prediction"].append(result.prediction)
        out["correct"].append(result.correct)
        out["answer_status"].append(status)
        out["rule"].append(result.rule)
    return out


def _skip_reason(response: str | None, k: int | None, chosen: Extractor) -> str | None:
    if not chosen.scores(k):
        return "other_kind"
    if response is None or not response.strip():
        return "no_response"
    if is_loglikelihood(response):
        return "loglikelihood"
    return None


def _run(chosen: Extractor, response: str, choices, gold, k, key) -> Extracted | None:
    try:
        return chosen.score(response, choices, gold, k)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a user extractor's failure, named with its row
        model, benchmark, seed, sample = key
        raise InputError(
            f"extractor {chosen.name} failed on model id {model}, benchmark id {benchmark}, "
            f"seed {seed}, sample {sample}: {type(exc).__name__}: {exc}"
        ) from exc


def rescored_table(columns: dict[str, list]) -> pa.Table:
    """Graded rows as ``forgetmap.db.scores.insert_rescored`` takes them."""
    schema = pa.schema(
        [
            ("model_id", pa.int32()),
            ("benchmark_id", pa.int32()),
            ("seed", pa.int32()),
            ("sample_id", pa.string()),
            ("prediction", pa.string()),
            ("correct", pa.bool_()),
            ("answer_status", pa.string()),
            ("rule", pa.string()),
        ]
    )
    return pa.Table.from_pydict(columns, schema=schema)


def score_sets(store: Store) -> list[dict]:
    """Every score set: name, extractor, rows, created_at."""
    with store.read() as conn:
        rows = scores_db.score_sets(conn)
    return [dict(zip(("name", "extractor", "rows", "created_at"), r, strict=True)) for r in rows]
