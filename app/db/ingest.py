"""Writing per-sample results and keeping the materialized counts current.

``ingest`` takes a validated normalized Arrow table (forgetmap.importers.common) and, inside the
caller's transaction: registers models and benchmarks, refuses rows that contradict stored ones,
inserts only new rows (so re-importing a file is a no-op), records runs, and recomputes the
transition, coverage and seed-vs-seed counts of every (pair, benchmark, seed) the new rows touch
(``forgetmap.db.pairing``, where ``add_pair`` creates a pair). The map reads only those small
tables.

All SQL here takes values as parameters; table and column names are fixed strings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.answer_status import NO_ANSWER, REFUSED, refines_to_refused
from forgetmap.core.columns import PAIR_KEY_LIMIT, dictionary_codes, pairs_repeat
from forgetmap.core.digests import distinct_within_groups
from forgetmap.core.errors import InputError
from forgetmap.core.naming import infer_family_and_size
from forgetmap.core.prompt_templates import unit_templates
from forgetmap.core.taxonomy import UNCATEGORIZED, BenchmarkMeta, lookup
from forgetmap.db.categories import category_changes
from forgetmap.db.pairing import refresh_counts
from forgetmap.db.prompts import store_template_pairs, store_templates
from forgetmap.db.store import Connection, one_row
from forgetmap.db.texts import TextWriter

Progress = Callable[[str, int, int], None]


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
    # benchmarks whose stored category the import changed: benchmark, before, after, and the
    # pairs whose numbers it moves (migration 0015 keeps the history)
    category_changes: tuple[dict[str, Any], ...] = ()


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def ensure_models(conn: Connection, names: list[str]) -> None:
    """Register models; family and size are guessed from the name (``forgetmap model set``
    fixes)."""
    for name in names:
        family, size = infer_family_and_size(name)
        conn.execute(
            "INSERT INTO models (name, family, size_params) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [name, family, size],
        )


def set_model_meta(
    conn: Connection, name: str, *, family: str | None, size_params: int | None
) -> None:
    counted = one_row(conn.execute("SELECT count(*) FROM models WHERE name = ?", [name]).fetchone())
    if counted[0] == 0:
        raise InputError(f"unknown model {name!r}; import its results first")
    conn.execute(
        "UPDATE models SET family = coalesce(?, family), size_params = coalesce(?, size_params) "
        "WHERE name = ?",
        [family, size_params, name],
    )


def ensure_benchmarks(
    conn: Connection, benchmarks: dict[str, BenchmarkMeta], *, source: str | None = None
) -> list[str]:
    """Register benchmarks (one statement each step); returns the names of those whose stored
    category this changed.

    A benchmark's category is the taxonomy's, else the first one its results name. A stored
    "Uncategorized" benchmark takes a category named now (or the taxonomy's, for one stored before
    the taxonomy knew it); the change moves the Total of every pair holding it, so it is kept in
    ``category_changes`` with ``source`` (migration 0015) and told by the import. A category named
    now for a benchmark whose category was named before, and differs, is refused."""
    if not benchmarks:
        return []
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
        differing = conn.execute(
            "SELECT b.name, b.category, m.category FROM benchmarks b JOIN benchmark_meta m "
            "USING (name) WHERE b.category <> m.category AND m.category <> ? ORDER BY b.name",
            [UNCATEGORIZED],
        ).fetchall()
        for name, stored, given in differing:
            taxonomy = lookup(name)
            if stored != UNCATEGORIZED and (taxonomy is None or taxonomy.category != given):
                raise InputError(
                    f"benchmark {name!r} is in category {stored!r} (named by its first results); "
                    f"these results name {given!r}: leave its category empty, or give "
                    f"{stored!r} (a category once named stays, so that stored pairs keep their "
                    "numbers)"
                )
        if differing:
            conn.execute(
                "INSERT INTO category_changes (benchmark_id, old_category, new_category, source) "
                "SELECT b.id, b.category, m.category, ? FROM benchmarks b JOIN benchmark_meta m "
                "USING (name) WHERE b.category <> m.category AND m.category <> ?",
                [source, UNCATEGORIZED],
            )
            conn.execute(
                "UPDATE benchmarks SET category = m.category FROM benchmark_meta m "
                "WHERE benchmarks.name = m.name AND benchmarks.category <> m.category "
                "AND m.category <> ?",
                [UNCATEGORIZED],
            )
    finally:
        conn.unregister("benchmark_meta")
    return [name for name, _, _ in differing]


def _raise_duplicates(duck: Connection) -> None:
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


def _codes_int(col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
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
    duplicated = not distinct_within_groups(unit, table["sample_id"]) and _duplicated(
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
            "SELECT count(*) FROM "
            "(SELECT DISTINCT model, benchmark, sample_id, seed FROM keys_check)"
        ).fetchall()[0][0]
    finally:
        conn.unregister("keys_check")
    return bool(distinct != table.num_rows)


_RESULT_COLUMNS = (
    "model_id, benchmark_id, seed, sample_id, run_id, correct, num_choices, prompt, response, "
    "prediction, gold, choices, doc_hash, prompt_tokens, completion_tokens, question, answer_status"
)
_INSERTED = (*_RESULT_COLUMNS.split(", "), "prompt_template_id", "response_ref")
_CUT_PROMPT = (
    "CASE WHEN prompt_template_id IS NULL OR cut_head IS NULL THEN prompt "
    "WHEN prompt_is_question THEN NULL "
    "ELSE substr(prompt, cut_head + 1, length(prompt) - cut_head - cut_tail) END"
)
"""What a batch's INSERT writes (``_insert``; a column the rows lack is NULL): a prompt is stored as
it comes unless the row's cuts (``cut_head``, ``cut_tail``: characters of the unit's template around
its own part) say what to cut out of it (``substr`` counts characters, as the cuts do), or none is
stored where the own part is the row's question (``prompt_is_question``)."""

_KEY_COLUMNS = ("model", "benchmark", "sample_id", "seed", "correct", "model_id", "benchmark_id")
"""What SQL sees of a batch (``incoming``): its keys, never its texts. DuckDB keeps every Arrow
table registered during a transaction alive until the transaction ends, unregistered or not
(measured: a tree of 40,000 answers of 18 kB, each batch registered whole: RSS grew ~20 kB a
row, to 1.2 GB; flat at 0.33 GB without), so a batch's rows reach DuckDB only through a relation
(``_insert``), which it lets go when the statement ends."""


class Ingest:
    """One import's writing, batch by batch, in the caller's transaction (see module docstring).

    ``add`` each validated normalized table (``forgetmap.importers.common.prepare``): its rows go
    into ``results`` at once; then ``finish``: the counts of every unit they touch are refreshed
    once. A reader's memory then holds one batch at a time, whatever the import's size. A row whose
    (model, benchmark, seed, sample_id) is stored already is skipped. With ``on_conflict="error"``
    (imports) a stored row with another ``correct`` raises InputError, leaving the transaction to be
    rolled back; with ``"keep"`` (worker uploads, where a retried shard may resample an answer) the
    first stored row wins, so each key is stored exactly once. A key given twice, in one batch or in
    two, is refused.

    A batch ``add``-ed with ``whole_units`` holds every row of each of its (model, benchmark,
    seed) units (lighteval's tasks of whole files), so its keys cannot recur in another batch and
    are not kept to check; the keys of other batches are (``import_keys``), a unit's rows may
    then come in many batches (a large file read in slices, a table file).
    """

    def __init__(
        self,
        conn: Connection,
        *,
        config: dict[str, Any],
        progress: Progress | None = None,
        on_conflict: str = "error",
        texts: TextWriter | None = None,
    ):
        if on_conflict not in ("error", "keep"):
            raise ValueError(f"on_conflict must be 'error' or 'keep', got {on_conflict!r}")
        self.conn, self.config, self.progress = conn, config, progress
        self.on_conflict = on_conflict
        self.chash = config_hash(config)
        self.models: set[str] = set()
        self.benchmarks: dict[str, BenchmarkMeta] = {}
        self.recategorized: list[str] = []  # benchmarks whose stored category this changed
        self.rows_read = self.rows_added = 0
        self.batches = 0
        self.texts = texts
        # the units this import writes: ``fresh`` where nothing was stored of them before it
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE import_units "
            "(model_id INTEGER, benchmark_id INTEGER, seed INTEGER, fresh BOOLEAN, whole BOOLEAN)"
        )
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE import_touched "
            "(model_id INTEGER, benchmark_id INTEGER, seed INTEGER)"
        )
        conn.execute(
            "CREATE OR REPLACE TEMP TABLE import_keys "
            "(model_id INTEGER, benchmark_id INTEGER, seed INTEGER, sample_id VARCHAR)"
        )

    def add(
        self,
        table: pa.Table,
        benchmarks: dict[str, BenchmarkMeta],
        *,
        grouped_by_sample: bool = False,
        whole_units: bool = False,
    ) -> None:
        """Check and stage one batch. ``grouped_by_sample``: its rows of one (benchmark, sample)
        are side by side already (the lighteval reader's order), so they are not sorted: the rows
        go in sorted by sample, so that the seeds of a question lie side by side and DuckDB's
        compression stores their shared texts once (a hint: a wrong one costs only file size).
        ``whole_units``: the batch holds every row of its units (class docstring)."""
        conn = self.conn
        table = _with_refusals(table)
        model_codes = dictionary_codes(table["model"])
        new_models = sorted(set(model_codes[1].to_pylist()) - self.models)
        ensure_models(conn, new_models)
        self.models.update(new_models)
        self.recategorized += ensure_benchmarks(
            conn, self._merge_benchmarks(benchmarks), source=self.config.get("source")
        )
        keys = _keys(conn, table, model_codes)
        table = table.append_column("model_id", pa.array(keys.model_ids)).append_column(
            "benchmark_id", pa.array(keys.benchmark_ids)
        )
        self.rows_read += table.num_rows
        self.batches += 1
        positions = pa.array(np.arange(table.num_rows, dtype=np.int64))
        conn.register("incoming", table.select(_KEY_COLUMNS).append_column("position", positions))
        conn.register("incoming_units", keys.units)
        try:
            if keys.duplicated:
                _raise_duplicates(conn)
            stored, recurring = self._classify_units(whole_units)
            if recurring:
                self._refuse_keys_given_before()
            if not whole_units:
                conn.execute(
                    "INSERT INTO import_keys "
                    "SELECT model_id, benchmark_id, seed, sample_id FROM incoming"
                )
            if stored:
                rows = _overlapping_rows(conn, table, self.chash, self.config, self.on_conflict)
            else:
                rows = _new_rows(conn, table, keys, self.chash, self.config)
        finally:
            conn.unregister("incoming")
            conn.unregister("incoming_units")
        del table
        if rows.num_rows:
            if self.texts is not None:
                rows = rows.append_column("response_ref", self.texts.split(conn, rows["response"]))
            _insert(conn, rows, sort=not grouped_by_sample)
        self.rows_added += rows.num_rows
        if self.progress:
            self.progress("write", self.rows_added, self.rows_read)

    def _merge_benchmarks(self, benchmarks: dict[str, BenchmarkMeta]) -> dict[str, BenchmarkMeta]:
        """Record a batch's benchmarks; returns those new to this import (to register). One
        benchmark given two categories in two batches is refused as in one (``prepare``)."""
        new = {}
        for name, meta in benchmarks.items():
            seen = self.benchmarks.get(name)
            if seen is None:
                self.benchmarks[name] = new[name] = meta
                continue
            if seen.category != meta.category:
                raise InputError(
                    f"benchmark {name!r} is given 2 categories ({seen.category}, "
                    f"{meta.category}); use one category per benchmark"
                )
            if seen.num_choices != meta.num_choices and seen.num_choices is not None:
                self.benchmarks[name] = BenchmarkMeta(seen.category, None)
        return new

    def _classify_units(self, whole: bool) -> tuple[bool, bool]:
        """Record the batch's units; returns (whether any has rows stored before this import,
        whether any was written by an earlier batch of it)."""
        conn = self.conn
        recurring, given_whole = conn.execute(
            "SELECT count(*), coalesce(bool_or(i.whole), false) FROM incoming_units u "
            "JOIN import_units i USING (model_id, benchmark_id, seed)"
        ).fetchall()[0]
        if recurring and (whole or given_whole):
            raise RuntimeError("a reader promising whole units gave a unit in two batches")
        conn.execute(
            """
            INSERT INTO import_units
            SELECT u.model_id, u.benchmark_id, u.seed, NOT EXISTS (
                SELECT 1 FROM runs r WHERE r.model_id = u.model_id
                  AND r.benchmark_id = u.benchmark_id AND r.seed = u.seed), ?
            FROM incoming_units u
            WHERE NOT EXISTS (SELECT 1 FROM import_units i WHERE i.model_id = u.model_id
                  AND i.benchmark_id = u.benchmark_id AND i.seed = u.seed)
            """,
            [whole],
        )
        stored = conn.execute(
            "SELECT count(*) FROM incoming_units u JOIN import_units i "
            "USING (model_id, benchmark_id, seed) WHERE NOT i.fresh"
        ).fetchall()[0][0]
        return bool(stored), bool(recurring)

    def _refuse_keys_given_before(self) -> None:
        """A key of this batch that an earlier batch of the import gave is a duplicate."""
        repeated = self.conn.execute(
            """
            SELECT s.model, s.benchmark, s.sample_id, s.seed FROM incoming s
            JOIN import_keys k USING (model_id, benchmark_id, seed, sample_id) LIMIT 1
            """
        ).fetchall()
        if repeated:
            model, bench, sample_id, seed = repeated[0]
            raise InputError(
                f"duplicate (benchmark, sample_id, seed) keys, e.g. model={model!r} "
                f"benchmark={bench!r} sample_id={sample_id!r} seed={seed} appears more than "
                "once; give each seed its own seed value or remove the repeated rows"
            )

    def finish(self) -> IngestSummary:
        """Refresh the counts of every unit the import added rows to; the summary."""
        conn = self.conn
        if self.texts is not None:
            self.texts.finish(conn)
        pairs, unpaired = refresh_counts(conn, "import_touched")
        changes = category_changes(conn, names=self.recategorized) if self.recategorized else []
        conn.execute("DROP TABLE import_units")
        conn.execute("DROP TABLE import_touched")
        conn.execute("DROP TABLE import_keys")
        return IngestSummary(
            rows_read=self.rows_read,
            rows_added=self.rows_added,
            rows_unchanged=self.rows_read - self.rows_added,
            models=tuple(sorted(self.models)),
            benchmarks=tuple(sorted(self.benchmarks)),
            pairs_refreshed=tuple(pairs),
            unpaired=unpaired,
            category_changes=tuple(changes),
        )


def ingest(
    conn: Connection,
    table: pa.Table,
    benchmarks: dict[str, BenchmarkMeta],
    *,
    config: dict[str, Any],
    progress: Progress | None = None,
    on_conflict: str = "error",
    grouped_by_sample: bool = False,
) -> IngestSummary:
    """Write one validated normalized table in the caller's transaction: ``Ingest`` of one batch."""
    writer = Ingest(conn, config=config, progress=progress, on_conflict=on_conflict)
    writer.add(table, benchmarks, grouped_by_sample=grouped_by_sample, whole_units=True)
    return writer.finish()


def _insert_runs(duck: Connection, units: str, chash: str, config: dict[str, Any]) -> None:
    duck.execute(
        f"""
        INSERT INTO runs (model_id, benchmark_id, seed, config_hash, config)
        SELECT DISTINCT model_id, benchmark_id, seed, ?, ? FROM {units}
        ORDER BY model_id, benchmark_id, seed
        ON CONFLICT DO NOTHING
        """,
        [chash, json.dumps(config, sort_keys=True)],
    )


def _with_refusals(table: pa.Table) -> pa.Table:
    """``table`` with each ``no_answer`` whose text declines to answer marked ``refused``
    (``forgetmap.core.answer_status.refines_to_refused``): one rule for every importer and the
    workers' uploads. Only the batch's no-answer rows are looked at (a few percent at most)."""
    status = table["answer_status"]
    rows = pc.indices_nonzero(pc.fill_null(pc.equal(status, NO_ANSWER), False)).to_numpy()
    if not len(rows):
        return table
    responses = table["response"].take(pa.array(rows)).to_pylist()
    refused = [i for i, text in zip(rows, responses, strict=True) if refines_to_refused(text)]
    if not refused:
        return table
    values = status.to_numpy(zero_copy_only=False).astype(object)
    values[refused] = REFUSED
    index = table.schema.get_field_index("answer_status")
    return table.set_column(index, "answer_status", pa.array(values, pa.string()))


def _new_rows(
    conn: Connection, table: pa.Table, keys: _Keys, chash: str, config: dict[str, Any]
) -> pa.Table:
    """Every unit of the batch is new (or new to this import): runs first, then the rows in the
    columns of the INSERT, with their run id looked up in numpy (one id per unit): no join.

    A unit's prompts are stored as the reader settled them (lighteval: its template and each
    row's own part), else split into what they all share, stored once
    (app/core/prompt_templates.py), and each row's own part, which the INSERT cuts out
    (``_CUT_PROMPT``)."""
    conn.execute(
        "INSERT INTO import_touched SELECT model_id, benchmark_id, seed FROM incoming_units"
    )
    _insert_runs(conn, "incoming_units", chash, config)
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
    extra = {}
    if table["prompt_prefix"].null_count < table.num_rows:
        extra["prompt_template_id"] = _settled_template_ids(conn, table)
    elif table["prompt"].null_count < table.num_rows:
        unit_index = np.searchsorted(unit_code, keys.unit)
        questions = table["question"] if table["question"].null_count < table.num_rows else None
        templates = unit_templates(table["prompt"], unit_index, len(unit_code), questions)
        template_id = store_templates(conn, templates)[unit_index]
        extra["prompt_template_id"] = pa.array(template_id, pa.int32(), mask=template_id < 0)
        extra["cut_head"] = pa.array(templates.prefix_chars[unit_index], pa.int32())
        extra["cut_tail"] = pa.array(templates.suffix_chars[unit_index], pa.int32())
        extra["prompt_is_question"] = pa.array(templates.around_question[unit_index])
    rows = table.select(_RESULT_COLUMNS.split(", "))
    for name, values in extra.items():
        rows = rows.append_column(name, values)
    return rows


def _overlapping_rows(
    duck: Connection, table: pa.Table, chash: str, config: dict[str, Any], on_conflict: str
) -> pa.Table:
    """Some units have stored rows: refuse contradictions (or keep the stored row); returns the
    rows not stored yet, in the columns of the INSERT (templates as the fresh rows store them)."""
    conflict = (
        on_conflict == "error"
        and duck.execute(
            """
        SELECT s.model, s.benchmark, s.sample_id, s.seed, r.correct, s.correct
        FROM incoming s JOIN results r USING (model_id, benchmark_id, seed, sample_id)
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
    # the rows not stored yet, by their place in the batch; their units' runs, then run ids
    duck.execute(
        """
        CREATE OR REPLACE TEMP TABLE fresh AS
        SELECT s.position, s.model_id, s.benchmark_id, s.seed FROM incoming s
        WHERE NOT EXISTS (
            SELECT 1 FROM results r
            WHERE r.model_id = s.model_id AND r.benchmark_id = s.benchmark_id
              AND r.seed = s.seed AND r.sample_id = s.sample_id
        )
        """
    )
    _insert_runs(duck, "fresh", chash, config)
    duck.execute(
        "INSERT INTO import_touched SELECT DISTINCT model_id, benchmark_id, seed FROM fresh"
    )
    found = duck.execute(
        """
        SELECT f.position, r.id FROM fresh f
        JOIN runs r ON r.model_id = f.model_id AND r.benchmark_id = f.benchmark_id
                   AND r.seed = f.seed AND r.config_hash = ?
        ORDER BY f.position
        """,
        [chash],
    ).fetchnumpy()
    duck.execute("DROP TABLE fresh")
    new = table.take(pa.array(np.asarray(found["position"], np.int64)))
    run_id = pa.array(np.asarray(found["id"], np.int32))
    rows = new.select(_RESULT_COLUMNS.split(", ")[:4]).append_column("run_id", run_id)
    for name in _RESULT_COLUMNS.split(", ")[5:]:
        rows = rows.append_column(name, new[name])
    if new["prompt_prefix"].null_count < new.num_rows:
        rows = rows.append_column("prompt_template_id", _settled_template_ids(duck, new))
    return rows


def _settled_template_ids(conn: Connection, table: pa.Table) -> pa.Array:
    """The reader settled each row's template and own part (lighteval): the templates stored
    once, each row's id (null where it has none), the own part stored as given. Reads put the
    prompt back together in SQL (``forgetmap.db.prompts.full_prompt``), the only place that does."""
    template_id = store_template_pairs(conn, table["prompt_prefix"], table["prompt_suffix"])
    return pa.array(template_id, pa.int32(), mask=template_id < 0)


def _insert(conn: Connection, rows: pa.Table, *, sort: bool) -> None:
    """A batch's rows into ``results``, through a relation (see ``_KEY_COLUMNS``). Sorted by
    sample unless the reader put them so: the seeds of one question then lie side by side, so
    DuckDB's compression stores their shared texts once (the paper's layout, two models: a 57 MB
    database instead of 133 MB)."""
    present = set(rows.column_names)

    def value(column: str) -> str:
        if column not in present:
            return "NULL"
        if column == "response" and "response_ref" in present:
            return "CASE WHEN response_ref IS NULL THEN response END"  # else in its answer file
        return _CUT_PROMPT if column == "prompt" and "cut_head" in present else column

    select = ", ".join(value(c) for c in _INSERTED)
    order = " ORDER BY benchmark_id, sample_id, seed" if sort else ""
    columns = ", ".join(_INSERTED)
    conn.from_arrow(rows).query(
        "batch_rows", f"INSERT INTO results ({columns}) SELECT {select} FROM batch_rows{order}"
    )
