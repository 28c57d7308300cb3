"""Writing per-sample results and keeping the materialized counts current.

``ingest`` takes a validated normalized Arrow table (app.importers.common) and, inside the caller's
transaction: registers models and benchmarks, refuses rows that contradict stored ones, inserts
only new rows (so re-importing a file is a no-op), records runs, and recomputes the transition,
coverage and seed-vs-seed counts of every (pair, benchmark, seed) the new rows touch
(``app.db.pairing``, where ``add_pair`` creates a pair). The map reads only those small tables.

All SQL here takes values as parameters; table and column names are fixed strings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from app.columns import PAIR_KEY_LIMIT, dictionary_codes, pairs_repeat
from app.db.digests import surely_distinct
from app.db.pairing import refresh_counts
from app.db.prompts import store_template_pairs, store_templates
from app.db.store import Connection
from app.errors import InputError
from app.naming import infer_family_and_size
from app.prompt_templates import unit_templates
from app.taxonomy import UNCATEGORIZED, BenchmarkMeta

Progress = Callable[[str, int, int], None]
WRITE_CHUNK_ROWS = 10_000_000
"""Rows per INSERT. One INSERT per import up to this: a second one in the same transaction
rewrites the first one's row groups (1.13M rows in chunks of 1M: a 82 MB file instead of 54 MB,
0.2 s more to insert and 0.4 s of checkpoint at close)."""


@dataclass(frozen=True)
class IngestSummary:
    rows_read: int
    rows_added: int
    rows_unchanged: int
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    pairs_refreshed: tuple[int, ...] = ()
    # per refreshed pair: samples that could not be paired (only in one model, or doc mismatch)
    unpaired: dict[int, dict[str, int]] = field(default_factory=dict)


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def ensure_models(conn: Connection, names: list[str]) -> None:
    """Register models; family and size are guessed from the name (``forgetmap model set`` fixes)."""
    for name in names:
        family, size = infer_family_and_size(name)
        conn.execute(
            "INSERT INTO models (name, family, size_params) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [name, family, size],
        )


def set_model_meta(
    conn: Connection, name: str, *, family: str | None, size_params: int | None
) -> None:
    if conn.execute("SELECT count(*) FROM models WHERE name = ?", [name]).fetchone()[0] == 0:
        raise InputError(f"unknown model {name!r}; import its results first")
    conn.execute(
        "UPDATE models SET family = coalesce(?, family), size_params = coalesce(?, size_params) "
        "WHERE name = ?",
        [family, size_params, name],
    )


def ensure_benchmarks(conn: Connection, benchmarks: dict[str, BenchmarkMeta]) -> None:
    """Register benchmarks (one statement); an existing "Uncategorized" one takes a category given now."""
    if not benchmarks:
        return
    meta = pa.table(
        {
            "name": list(benchmarks),
            "category": [m.category for m in benchmarks.values()],
            "num_choices": pa.array([m.num_choices for m in benchmarks.values()], pa.int16()),
        }
    )
    conn.register("benchmark_meta", meta)
    try:
        conn.execute(
            "INSERT INTO benchmarks (name, category, num_choices) "
            "SELECT name, category, num_choices FROM benchmark_meta ON CONFLICT DO NOTHING"
        )
        conn.execute(
            "UPDATE benchmarks SET category = m.category FROM benchmark_meta m "
            "WHERE benchmarks.name = m.name AND benchmarks.category = ? AND m.category <> ?",
            [UNCATEGORIZED, UNCATEGORIZED],
        )
    finally:
        conn.unregister("benchmark_meta")


def _raise_duplicates(duck) -> None:
    """Name one duplicated (model, benchmark, sample_id, seed) key of the incoming table."""
    dup = duck.execute(
        """
        SELECT model, benchmark, sample_id, seed, count(*) AS n, count(*) OVER () AS keys
        FROM incoming GROUP BY model, benchmark, sample_id, seed HAVING count(*) > 1 LIMIT 1
        """
    ).fetchall()
    model, bench, sample_id, seed, n, keys = dup[0]
    raise InputError(
        f"{keys} duplicate (benchmark, sample_id, seed) keys, e.g. model={model!r} "
        f"benchmark={bench!r} sample_id={sample_id!r} seed={seed} appears {n} times; "
        "give each seed its own seed value or remove the repeated rows"
    )


@dataclass
class _Keys:
    """Integer codes of an incoming table's keys, computed in Arrow/numpy (no SQL pass).

    ``unit`` numbers each row's (model, benchmark, seed) in [0, n_units_space); ``units`` lists the
    present ones as (unit code, model_id, benchmark_id, seed), in unit-code order.
    """

    models: list[str]
    model_ids: np.ndarray  # per row, int32
    benchmark_ids: np.ndarray  # per row, int32
    unit: np.ndarray  # per row, int64
    space: int  # unit codes are < space
    units: pa.Table  # unit, model_id, benchmark_id, seed
    duplicated: bool


def _codes_int(col) -> tuple[np.ndarray, np.ndarray]:
    """Codes of an integer column without nulls (seeds): offsets when the range is narrow."""
    values = (
        col.to_numpy() if isinstance(col, pa.ChunkedArray) else col.to_numpy(zero_copy_only=False)
    )
    if len(values) == 0:
        return np.zeros(0, np.int32), values
    lo, hi = int(values.min()), int(values.max())
    if hi - lo <= 1 << 20:
        offset = values.astype(np.int64) - lo
        present = np.bincount(offset, minlength=hi - lo + 1) > 0
        renumber = np.cumsum(present, dtype=np.int32) - 1
        return renumber[offset], (np.flatnonzero(present) + lo)
    distinct, codes = np.unique(values, return_inverse=True)
    return codes.astype(np.int32), distinct


def _keys(conn: Connection, table: pa.Table, model_codes: tuple[np.ndarray, pa.Array]) -> _Keys:
    """Ids, units and the duplicate check of (model, benchmark, sample_id, seed), from codes.

    Name columns are coded per distinct value (dictionary-encoded columns hash their dictionary,
    not their rows); the ids of the few hundred names come from one lookup each.
    """
    ids = {}
    codes = {}
    names = {}
    for column, source in (("model", "models"), ("benchmark", "benchmarks")):
        code, values = model_codes if column == "model" else dictionary_codes(table[column])
        found = dict(
            conn.execute(
                f"SELECT name, id FROM {source} WHERE name IN (SELECT unnest(?))",
                [values.to_pylist()],
            ).fetchall()
        )
        names[column] = values.to_pylist()
        ids[column] = np.asarray([found[v] for v in names[column]], np.int32)
        codes[column] = code
    seed_code, seeds = _codes_int(table["seed"])
    nm, nb, ns = len(names["model"]), len(names["benchmark"]), len(seeds)
    unit = (codes["model"].astype(np.int64) * nb + codes["benchmark"]) * ns + seed_code
    space = nm * nb * ns
    if space <= max(len(unit), 1 << 20):
        present = np.flatnonzero(np.bincount(unit, minlength=space))
    else:
        present = np.unique(unit)
    units = pa.table(
        {
            "unit": pa.array(present, pa.int64()),
            "model_id": pa.array(ids["model"][present // (nb * ns)]),
            "benchmark_id": pa.array(ids["benchmark"][(present // ns) % nb]),
            "seed": pa.array(seeds[present % ns].astype(np.int32)),
        }
    )
    duplicated = not surely_distinct(unit, table["sample_id"]) and _duplicated(
        conn, table, unit, space
    )
    return _Keys(
        models=names["model"],
        model_ids=ids["model"][codes["model"]],
        benchmark_ids=ids["benchmark"][codes["benchmark"]],
        unit=unit,
        space=space,
        units=units,
        duplicated=duplicated,
    )


def _duplicated(conn: Connection, table: pa.Table, unit: np.ndarray, space: int) -> bool:
    """Whether two rows share (unit, sample_id), exactly: their (unit, sample) codes repeat."""
    sample_code, sample_values = dictionary_codes(table["sample_id"])
    if space * len(sample_values) < PAIR_KEY_LIMIT:
        return pairs_repeat(unit, space, sample_code, len(sample_values))
    # astronomically many codes: let SQL count
    conn.register("keys_check", table.select(["model", "benchmark", "sample_id", "seed"]))
    try:
        distinct = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT model, benchmark, sample_id, seed FROM keys_check)"
        ).fetchall()[0][0]
    finally:
        conn.unregister("keys_check")
    return distinct != table.num_rows


_RESULT_COLUMNS = (
    "model_id, benchmark_id, seed, sample_id, run_id, correct, num_choices, prompt, response, "
    "prediction, gold, choices, doc_hash, prompt_tokens, completion_tokens, question"
)


def ingest(
    conn: Connection,
    table: pa.Table,
    benchmarks: dict[str, BenchmarkMeta],
    *,
    config: dict,
    progress: Progress | None = None,
    on_conflict: str = "error",
    grouped_by_sample: bool = False,
) -> IngestSummary:
    """Write a validated normalized table in the caller's transaction (see module docstring).

    A row whose (model, benchmark, seed, sample_id) is stored already is skipped. With
    ``on_conflict="error"`` (imports) a stored row with another ``correct`` raises InputError,
    leaving the transaction to be rolled back; with ``"keep"`` (worker uploads, where a retried
    shard may resample an answer) the first stored row wins, so each key is stored exactly once.

    Rows of (model, benchmark, seed) units with nothing stored yet (every first import) go straight
    from Arrow into ``results``; only units that overlap stored rows pay for the comparison. They
    are inserted sorted by sample, so that the seeds of a question lie side by side and DuckDB's
    compression stores their shared texts once; ``grouped_by_sample`` says the table's rows of
    one (benchmark, sample) are side by side already (the lighteval reader's order): they are
    inserted as they come, without the sort (a hint: a wrong one costs only file size).
    """
    if on_conflict not in ("error", "keep"):
        raise ValueError(f"on_conflict must be 'error' or 'keep', got {on_conflict!r}")
    model_codes = dictionary_codes(table["model"])
    models = sorted(model_codes[1].to_pylist())
    ensure_models(conn, models)
    ensure_benchmarks(conn, benchmarks)
    chash = config_hash(config)
    keys = _keys(conn, table, model_codes)
    table = table.append_column("model_id", pa.array(keys.model_ids)).append_column(
        "benchmark_id", pa.array(keys.benchmark_ids)
    )
    conn.register("incoming", table)
    conn.register("incoming_units", keys.units)
    try:
        if keys.duplicated:
            _raise_duplicates(conn)
        # units with anything stored already (any config) take the comparing path
        overlap = conn.execute(
            "SELECT count(*) FROM incoming_units u WHERE EXISTS (SELECT 1 FROM runs r "
            "WHERE r.model_id = u.model_id AND r.benchmark_id = u.benchmark_id AND r.seed = u.seed)"
        ).fetchall()[0][0]
        if overlap:
            # the comparing joins run faster on plain strings than on dictionary-encoded ones
            conn.unregister("incoming")
            conn.register("incoming", _decoded(table))
            rows_added = _ingest_overlapping(conn, chash, config, on_conflict)
        else:
            rows_added = _ingest_new(
                conn, table, keys, chash, config, progress, sort=not grouped_by_sample
            )
        pairs, unpaired = refresh_counts(conn, "touched")
        conn.execute("DROP TABLE touched")
    finally:
        conn.unregister("incoming")
        conn.unregister("incoming_units")
    return IngestSummary(
        rows_read=table.num_rows,
        rows_added=rows_added,
        rows_unchanged=table.num_rows - rows_added,
        models=tuple(models),
        benchmarks=tuple(sorted(benchmarks)),
        pairs_refreshed=tuple(pairs),
        unpaired=unpaired,
    )


def _decoded(table: pa.Table) -> pa.Table:
    """The table with dictionary-encoded columns cast to their plain value type."""
    schema = pa.schema(
        [
            pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
            for f in table.schema
        ]
    )
    return table if schema == table.schema else table.cast(schema)


def _insert_runs(duck, units: str, chash: str, config: dict) -> None:
    duck.execute(
        f"""
        INSERT INTO runs (model_id, benchmark_id, seed, config_hash, config)
        SELECT DISTINCT model_id, benchmark_id, seed, ?, ? FROM {units}
        ORDER BY model_id, benchmark_id, seed
        ON CONFLICT DO NOTHING
        """,
        [chash, json.dumps(config, sort_keys=True)],
    )


def _ingest_new(
    conn: Connection,
    table: pa.Table,
    keys: _Keys,
    chash: str,
    config: dict,
    progress: Progress | None,
    *,
    sort: bool,
) -> int:
    """Every incoming unit is new: runs first, then the rows straight from Arrow with their run id.

    The run id of each row is looked up in numpy (one id per unit), so the insert reads the Arrow
    table as it is: no join. All-null optional columns are left to the column default (NULL).
    """
    conn.execute(
        "CREATE OR REPLACE TEMP TABLE touched AS SELECT model_id, benchmark_id, seed FROM incoming_units"
    )
    _insert_runs(conn, "touched", chash, config)
    run_of_unit = conn.execute(
        """
        SELECT u.unit, r.id FROM incoming_units u
        JOIN runs r ON r.model_id = u.model_id AND r.benchmark_id = u.benchmark_id
                   AND r.seed = u.seed AND r.config_hash = ?
        """,
        [chash],
    ).fetchnumpy()
    unit_code = keys.units["unit"].to_numpy()
    if len(run_of_unit["unit"]) != len(unit_code):
        raise RuntimeError("a run row is missing for an incoming unit")
    found_unit = np.asarray(run_of_unit["unit"], np.int64)
    found_id = np.asarray(run_of_unit["id"], np.int32)
    if keys.space <= max(len(keys.unit), 1 << 20):
        by_code = np.zeros(keys.space, np.int32)  # unit code -> run id
        by_code[found_unit] = found_id
        run_id = by_code[keys.unit]
    else:  # through the position of each code among the sorted present units
        by_position = np.empty(len(unit_code), np.int32)
        by_position[np.searchsorted(unit_code, found_unit)] = found_id
        run_id = by_position[np.searchsorted(unit_code, keys.unit)]
    table = table.append_column("run_id", pa.array(run_id))
    columns = [
        c
        for c in _RESULT_COLUMNS.split(", ")
        if c in _ALWAYS_WRITTEN or table[c].null_count < table.num_rows
    ]
    selected = list(columns)
    if table["prompt_prefix"].null_count < table.num_rows:
        # the reader settled each row's template and own part (lighteval): store them as given
        template_id = store_template_pairs(conn, table["prompt_prefix"], table["prompt_suffix"])
        table = table.append_column(
            "prompt_template_id", pa.array(template_id, pa.int32(), mask=template_id < 0)
        )
        columns.append("prompt_template_id")
        selected.append("prompt_template_id")
    elif "prompt" in columns:
        # what every prompt of a unit shares is stored once (app/prompt_templates.py); DuckDB cuts
        # each row's own part out while inserting (substr counts characters, as the cuts do), or
        # stores none where the own part is the row's question
        unit_index = np.searchsorted(unit_code, keys.unit)
        questions = table["question"] if "question" in columns else None
        templates = unit_templates(table["prompt"], unit_index, len(unit_code), questions)
        template_id = store_templates(conn, templates)[unit_index]
        table = (
            table.append_column("prompt_template_id",
                                pa.array(template_id, pa.int32(), mask=template_id < 0))
            .append_column("cut_head", pa.array(templates.prefix_chars[unit_index]))
            .append_column("cut_tail", pa.array(templates.suffix_chars[unit_index]))
            .append_column("prompt_is_question", pa.array(templates.around_question[unit_index]))
        )  # fmt: skip
        columns.append("prompt_template_id")
        selected[selected.index("prompt")] = (
            "CASE WHEN prompt_template_id IS NULL THEN prompt WHEN prompt_is_question THEN NULL "
            "ELSE substr(prompt, cut_head + 1, length(prompt) - cut_head - cut_tail) END"
        )
        selected.append("prompt_template_id")
    column_list, select_list = ", ".join(columns), ", ".join(selected)
    rows = table.num_rows
    # rows sorted by sample: the seeds of one question lie side by side, so DuckDB's compression
    # stores their shared texts once (the paper's layout, two models: a 57 MB database instead
    # of 133 MB; an import 0.3-0.5 s faster)
    order = " ORDER BY benchmark_id, sample_id, seed" if sort else ""
    if not sort:
        # in batches of whole files (a reader's), rarely multiples of DuckDB's row groups
        # (122,880 rows), the insert costs half again: one chunk per column instead (a copy into
        # memory the reader freed: 10-60 ms for a paper import's 564,000 rows)
        table = table.combine_chunks()
    for start in range(0, rows, WRITE_CHUNK_ROWS):
        conn.register("chunk", table.slice(start, WRITE_CHUNK_ROWS))
        try:
            conn.execute(
                f"INSERT INTO results ({column_list}) SELECT {select_list} FROM chunk{order}"
            )
        finally:
            conn.unregister("chunk")
        if progress:
            progress("write", min(start + WRITE_CHUNK_ROWS, rows), rows)
    return rows


_ALWAYS_WRITTEN = frozenset(("model_id", "benchmark_id", "seed", "sample_id", "run_id", "correct"))


def _ingest_overlapping(duck, chash: str, config: dict, on_conflict: str) -> int:
    """Some units have stored rows: refuse contradictions (or keep the stored row), add the rest."""
    duck.execute(
        """
        CREATE OR REPLACE TEMP TABLE staged AS
        SELECT s.model_id, s.benchmark_id, s.seed, s.sample_id, s.correct, s.num_choices,
               CASE WHEN s.prompt_prefix IS NULL THEN s.prompt
                    ELSE s.prompt_prefix || coalesce(s.prompt, s.question) || s.prompt_suffix
               END AS prompt,
               s.response, s.prediction, s.gold, s.choices, s.doc_hash,
               s.prompt_tokens, s.completion_tokens, s.question, s.model, s.benchmark
        FROM incoming s
        """
    )
    conflict = (
        on_conflict == "error"
        and duck.execute(
            """
        SELECT s.model, s.benchmark, s.sample_id, s.seed, r.correct, s.correct
        FROM staged s JOIN results r USING (model_id, benchmark_id, seed, sample_id)
        WHERE r.correct <> s.correct LIMIT 1
        """
        ).fetchall()
    )
    if conflict:
        model, bench, sample_id, seed, old, new = conflict[0]
        raise InputError(
            f"model={model!r} benchmark={bench!r} sample_id={sample_id!r} seed={seed} is already "
            f"stored with correct={int(old)} but this file says {int(new)}; import it as another "
            "model name or seed if it is a different evaluation"
        )
    duck.execute(
        """
        CREATE OR REPLACE TEMP TABLE staged_new AS
        SELECT s.* FROM staged s
        WHERE NOT EXISTS (
            SELECT 1 FROM results r
            WHERE r.model_id = s.model_id AND r.benchmark_id = s.benchmark_id
              AND r.seed = s.seed AND r.sample_id = s.sample_id
        )
        """
    )
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE touched AS SELECT DISTINCT model_id, benchmark_id, seed FROM staged_new"
    )
    _insert_runs(duck, "touched", chash, config)
    duck.execute(
        f"""
        INSERT INTO results ({_RESULT_COLUMNS})
        SELECT s.model_id, s.benchmark_id, s.seed, s.sample_id, r.id, s.correct, s.num_choices,
               s.prompt, s.response, s.prediction, s.gold, s.choices, s.doc_hash, s.prompt_tokens,
               s.completion_tokens, s.question
        FROM staged_new s
        JOIN runs r ON r.model_id = s.model_id AND r.benchmark_id = s.benchmark_id
                   AND r.seed = s.seed AND r.config_hash = ?
        """,
        [chash],
    )
    rows_added = duck.execute("SELECT count(*) FROM staged_new").fetchone()[0]
    duck.execute("DROP TABLE staged")
    duck.execute("DROP TABLE staged_new")
    return rows_added
