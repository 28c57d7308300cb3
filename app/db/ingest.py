"""Writing per-sample results and keeping the materialized counts current.

``ingest`` takes a validated normalized Arrow table (app.importers.common) and, inside the caller's
transaction: registers models and benchmarks, refuses rows that contradict stored ones, inserts
only new rows (so re-importing a file is a no-op), records runs, and recomputes the transition,
coverage and seed-vs-seed counts of every (pair, benchmark, seed) the new rows touch. The map reads
only those small tables.

All SQL here takes values as parameters; table and column names are fixed strings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from sqlalchemy import Connection

from app.columns import dictionary_codes
from app.errors import InputError
from app.naming import infer_family_and_size
from app.sample_identity import AMBIGUOUS_MARK, QUESTION_KEY_PREFIX, link_candidates
from app.taxonomy import UNCATEGORIZED, BenchmarkMeta

Progress = Callable[[str, int, int], None]
WRITE_CHUNK_ROWS = 1_000_000


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


def _duck(conn: Connection):
    return conn.connection.driver_connection


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def ensure_models(conn: Connection, names: list[str]) -> None:
    """Register models; family and size are guessed from the name (``forgetmap model set`` fixes)."""
    duck = _duck(conn)
    for name in names:
        family, size = infer_family_and_size(name)
        duck.execute(
            "INSERT INTO models (name, family, size_params) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [name, family, size],
        )


def set_model_meta(
    conn: Connection, name: str, *, family: str | None, size_params: int | None
) -> None:
    duck = _duck(conn)
    if duck.execute("SELECT count(*) FROM models WHERE name = ?", [name]).fetchone()[0] == 0:
        raise InputError(f"unknown model {name!r}; import its results first")
    duck.execute(
        "UPDATE models SET family = coalesce(?, family), size_params = coalesce(?, size_params) "
        "WHERE name = ?",
        [family, size_params, name],
    )


def ensure_benchmarks(conn: Connection, benchmarks: dict[str, BenchmarkMeta]) -> None:
    """Register benchmarks (one statement); an existing "Uncategorized" one takes a category given now."""
    if not benchmarks:
        return
    duck = _duck(conn)
    meta = pa.table(
        {
            "name": list(benchmarks),
            "category": [m.category for m in benchmarks.values()],
            "num_choices": pa.array([m.num_choices for m in benchmarks.values()], pa.int16()),
        }
    )
    duck.register("benchmark_meta", meta)
    try:
        duck.execute(
            "INSERT INTO benchmarks (name, category, num_choices) "
            "SELECT name, category, num_choices FROM benchmark_meta ON CONFLICT DO NOTHING"
        )
        duck.execute(
            "UPDATE benchmarks SET category = m.category FROM benchmark_meta m "
            "WHERE benchmarks.name = m.name AND benchmarks.category = ? AND m.category <> ?",
            [UNCATEGORIZED, UNCATEGORIZED],
        )
    finally:
        duck.unregister("benchmark_meta")


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


# the duplicate check marks each (unit, sample) key in a bitmap of this many bytes at most
# (beyond it, and beyond 8 bytes per row, it sorts the keys instead)
_BITMAP_BYTES = 1 << 26
# (unit, sample) codes below this fit an int64; beyond it SQL counts the distinct keys
_KEY_SORT_LIMIT = 2**62


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
    duck = _duck(conn)
    ids = {}
    codes = {}
    names = {}
    for column, source in (("model", "models"), ("benchmark", "benchmarks")):
        code, values = model_codes if column == "model" else dictionary_codes(table[column])
        found = dict(
            duck.execute(
                f"SELECT name, id FROM {source} WHERE name IN (SELECT unnest(?))",
                [values.to_pylist()],
            ).fetchall()
        )
        names[column] = values.to_pylist()
        ids[column] = np.asarray([found[v] for v in names[column]], np.int32)
        codes[column] = code
    seed_code, seeds = _codes_int(table["seed"])
    sample_code, sample_values = dictionary_codes(table["sample_id"])
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
    # duplicate (unit, sample) keys: distinct keys < rows
    nsamples = len(sample_values)
    key_space = space * nsamples
    if key_space <= min(_BITMAP_BYTES, max(8 * len(unit), 1 << 22)):
        seen = np.zeros(key_space, np.bool_)
        seen[unit * nsamples + sample_code] = True
        distinct = int(np.count_nonzero(seen))
    elif key_space < _KEY_SORT_LIMIT:
        distinct = len(np.unique(unit * nsamples + sample_code))
    else:  # astronomically many codes: let SQL count
        distinct = None
    if distinct is None:
        duck.register("keys_check", table.select(["model", "benchmark", "sample_id", "seed"]))
        try:
            distinct = duck.execute(
                "SELECT count(*) FROM (SELECT DISTINCT model, benchmark, sample_id, seed FROM keys_check)"
            ).fetchall()[0][0]
        finally:
            duck.unregister("keys_check")
    return _Keys(
        models=names["model"],
        model_ids=ids["model"][codes["model"]],
        benchmark_ids=ids["benchmark"][codes["benchmark"]],
        unit=unit,
        space=space,
        units=units,
        duplicated=distinct != table.num_rows,
    )


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
) -> IngestSummary:
    """Write a validated normalized table in the caller's transaction (see module docstring).

    A row whose (model, benchmark, seed, sample_id) is stored already is skipped. With
    ``on_conflict="error"`` (imports) a stored row with another ``correct`` raises InputError,
    leaving the transaction to be rolled back; with ``"keep"`` (worker uploads, where a retried
    shard may resample an answer) the first stored row wins, so each key is stored exactly once.

    Rows of (model, benchmark, seed) units with nothing stored yet (every first import) go straight
    from Arrow into ``results``; only units that overlap stored rows pay for the comparison.
    """
    if on_conflict not in ("error", "keep"):
        raise ValueError(f"on_conflict must be 'error' or 'keep', got {on_conflict!r}")
    duck = _duck(conn)
    model_codes = dictionary_codes(table["model"])
    models = sorted(model_codes[1].to_pylist())
    ensure_models(conn, models)
    ensure_benchmarks(conn, benchmarks)
    chash = config_hash(config)
    keys = _keys(conn, table, model_codes)
    table = table.append_column("model_id", pa.array(keys.model_ids)).append_column(
        "benchmark_id", pa.array(keys.benchmark_ids)
    )
    duck.register("incoming", table)
    duck.register("incoming_units", keys.units)
    try:
        if keys.duplicated:
            _raise_duplicates(duck)
        # units with anything stored already (any config) take the comparing path
        overlap = duck.execute(
            "SELECT count(*) FROM incoming_units u WHERE EXISTS (SELECT 1 FROM runs r "
            "WHERE r.model_id = u.model_id AND r.benchmark_id = u.benchmark_id AND r.seed = u.seed)"
        ).fetchall()[0][0]
        if overlap:
            # the comparing joins run faster on plain strings than on dictionary-encoded ones
            duck.unregister("incoming")
            duck.register("incoming", _decoded(table))
            rows_added = _ingest_overlapping(duck, chash, config, on_conflict)
        else:
            rows_added = _ingest_new(duck, table, keys, chash, config, progress)
        pairs, unpaired = refresh_counts(conn, "touched")
        duck.execute("DROP TABLE touched")
    finally:
        duck.unregister("incoming")
        duck.unregister("incoming_units")
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
    duck, table: pa.Table, keys: _Keys, chash: str, config: dict, progress: Progress | None
) -> int:
    """Every incoming unit is new: runs first, then the rows straight from Arrow with their run id.

    The run id of each row is looked up in numpy (one id per unit), so the insert reads the Arrow
    table as it is: no join. All-null optional columns are left to the column default (NULL).
    """
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE touched AS SELECT model_id, benchmark_id, seed FROM incoming_units"
    )
    _insert_runs(duck, "touched", chash, config)
    run_of_unit = duck.execute(
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
    column_list = ", ".join(columns)
    rows = table.num_rows
    for start in range(0, rows, WRITE_CHUNK_ROWS):
        duck.register("chunk", table.slice(start, WRITE_CHUNK_ROWS))
        try:
            duck.execute(f"INSERT INTO results ({column_list}) SELECT {column_list} FROM chunk")
        finally:
            duck.unregister("chunk")
        if progress:
            progress("write", min(start + WRITE_CHUNK_ROWS, rows), rows)
    return rows


_ALWAYS_WRITTEN = frozenset(("model_id", "benchmark_id", "seed", "sample_id", "run_id", "correct"))


def _ingest_overlapping(duck, chash: str, config: dict, on_conflict: str) -> int:
    """Some units have stored rows: refuse contradictions (or keep the stored row), add the rest."""
    duck.execute(
        """
        CREATE OR REPLACE TEMP TABLE staged AS
        SELECT s.model_id, s.benchmark_id, s.seed, s.sample_id, s.correct,
               s.num_choices, s.prompt, s.response, s.prediction, s.gold, s.choices, s.doc_hash,
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


def refresh_counts(
    conn: Connection, touched: str, pair_ids: list[int] | None = None
) -> tuple[list[int], dict]:
    """Recompute materialized counts for every unit the rows in temp table ``touched`` reach.

    ``touched`` has columns model_id, benchmark_id, seed. A unit is (pair, benchmark, seed) for
    every pair with a touched model on either side (or only ``pair_ids`` when given). Returns the
    refreshed pair ids and, per pair, the unpaired sample counts summed over its units.
    """
    duck = _duck(conn)
    if (
        pair_ids is None
        and not duck.execute(
            f"SELECT count(*) FROM pairs WHERE base_model_id IN (SELECT model_id FROM {touched}) "
            f"OR post_model_id IN (SELECT model_id FROM {touched})"
        ).fetchall()[0][0]
    ):
        # no pair has a touched model: no transition, coverage or noise-floor count can change
        # (an import counts seed-vs-seed only for paired models; add_pair counts the rest)
        return [], {}
    pair_filter = ""
    params: list = []
    if pair_ids is not None:
        pair_filter = f"AND p.id IN ({', '.join('?' for _ in pair_ids)})"
        params = list(pair_ids)
    duck.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE affected AS
        SELECT DISTINCT p.id AS pair_id, p.base_model_id, p.post_model_id, t.benchmark_id, t.seed
        FROM pairs p JOIN (SELECT DISTINCT model_id, benchmark_id, seed FROM {touched}) t
          ON t.model_id = p.base_model_id OR t.model_id = p.post_model_id
        WHERE true {pair_filter}
        """,
        params,
    )
    link_by_text(duck)
    duck.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE joined AS
        WITH base AS (
            SELECT a.pair_id, r.benchmark_id, r.seed, r.sample_id, r.correct, r.num_choices, r.doc_hash,
                   r.sample_id LIKE '%{AMBIGUOUS_MARK}%' AS ambiguous
            FROM affected a JOIN results r
              ON r.model_id = a.base_model_id AND r.benchmark_id = a.benchmark_id AND r.seed = a.seed
        ), post AS (
            SELECT a.pair_id, r.benchmark_id, r.seed,
                   coalesce(l.base_sample_id, r.sample_id) AS sample_id,
                   l.base_sample_id IS NOT NULL AS by_text,
                   r.correct, r.num_choices, r.doc_hash,
                   r.sample_id LIKE '%{AMBIGUOUS_MARK}%' AS ambiguous
            FROM affected a JOIN results r
              ON r.model_id = a.post_model_id AND r.benchmark_id = a.benchmark_id AND r.seed = a.seed
            LEFT JOIN sample_links l
              ON l.pair_id = a.pair_id AND l.benchmark_id = r.benchmark_id
             AND l.post_sample_id = r.sample_id
        )
        SELECT coalesce(b.pair_id, p.pair_id) AS pair_id,
               coalesce(b.benchmark_id, p.benchmark_id) AS benchmark_id,
               coalesce(b.seed, p.seed) AS seed,
               b.correct AS pre, p.correct AS post,
               coalesce(b.num_choices, p.num_choices, 0) AS k,
               coalesce(b.ambiguous, p.ambiguous) AS ambiguous,
               p.sample_id IS NULL AND NOT b.ambiguous AS only_base,
               b.sample_id IS NULL AND NOT p.ambiguous AS only_post,
               coalesce(b.doc_hash <> p.doc_hash, false) AS mismatched,
               coalesce(p.by_text, false) AS by_text,
               coalesce(b.sample_id LIKE '{QUESTION_KEY_PREFIX}%', false) AS by_question
        FROM base b FULL OUTER JOIN post p
          ON b.pair_id = p.pair_id AND b.benchmark_id = p.benchmark_id
         AND b.seed = p.seed AND b.sample_id = p.sample_id
         AND NOT b.ambiguous AND NOT p.ambiguous
        """
    )
    for table in ("transitions", "coverage"):
        duck.execute(
            f"DELETE FROM {table} USING affected a WHERE {table}.pair_id = a.pair_id "
            f"AND {table}.benchmark_id = a.benchmark_id AND {table}.seed = a.seed"
        )
    duck.execute(
        """
        INSERT INTO transitions
        SELECT pair_id, benchmark_id, seed, k,
               count(*) FILTER (WHERE NOT pre AND NOT post),
               count(*) FILTER (WHERE NOT pre AND post),
               count(*) FILTER (WHERE pre AND NOT post),
               count(*) FILTER (WHERE pre AND post)
        FROM joined WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched
        GROUP BY pair_id, benchmark_id, seed, k
        """
    )
    duck.execute(
        """
        INSERT INTO coverage (pair_id, benchmark_id, seed, paired, only_base, only_post,
                              mismatched, ambiguous, by_question, by_text)
        SELECT pair_id, benchmark_id, seed,
               count(*) FILTER (WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched),
               count(*) FILTER (WHERE only_base),
               count(*) FILTER (WHERE only_post),
               count(*) FILTER (WHERE mismatched),
               count(*) FILTER (WHERE ambiguous),
               count(*) FILTER (WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched
                                AND by_question AND NOT by_text),
               count(*) FILTER (WHERE pre IS NOT NULL AND post IS NOT NULL AND NOT mismatched
                                AND by_text)
        FROM joined GROUP BY pair_id, benchmark_id, seed
        """
    )
    rows = duck.execute(
        """
        SELECT pair_id, sum(only_base::INT), sum(only_post::INT), sum(mismatched::INT),
               sum(ambiguous::INT)
        FROM joined GROUP BY pair_id ORDER BY pair_id
        """
    ).fetchall()
    _refresh_seed_transitions(duck, touched, only_paired=pair_ids is None)
    duck.execute("DROP TABLE joined")
    duck.execute("DROP TABLE affected")
    unpaired = {
        pid: {"only_base": int(a), "only_post": int(b), "mismatched": int(c), "ambiguous": int(d)}
        for pid, a, b, c, d in rows
    }
    return [r[0] for r in rows], unpaired


def link_by_text(duck) -> int:
    """Link still-unpaired samples of the pairs in temp table ``affected`` by question text.

    For each (pair, benchmark): base samples whose id no post sample has (any seed) and post
    samples likewise, neither ambiguous nor linked already, are matched by
    ``app.sample_identity.link_candidates``; the links go to ``sample_links``. Returns how many.
    """

    def unmatched(side: str, other: str) -> str:
        """One side's samples that no sample of the other side shares an id with (any seed)."""
        return f"""
            SELECT pb.pair_id, r.benchmark_id, r.sample_id, '{side}' AS side,
                   any_value(r.question) AS question, any_value(r.prompt) AS prompt
            FROM pb JOIN results r ON r.model_id = pb.{side}_model_id
                                  AND r.benchmark_id = pb.benchmark_id
            WHERE r.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%'
              AND NOT EXISTS (SELECT 1 FROM results x WHERE x.model_id = pb.{other}_model_id
                              AND x.benchmark_id = r.benchmark_id AND x.sample_id = r.sample_id)
              AND NOT EXISTS (SELECT 1 FROM sample_links l WHERE l.pair_id = pb.pair_id
                              AND l.benchmark_id = r.benchmark_id
                              AND l.{side}_sample_id = r.sample_id)
            GROUP BY pb.pair_id, r.benchmark_id, r.sample_id"""

    rows = duck.execute(
        f"""
        WITH pb AS (
            SELECT DISTINCT pair_id, base_model_id, post_model_id, benchmark_id FROM affected
        ), base AS ({unmatched("base", "post")}
        ), post AS ({unmatched("post", "base")}
        ), both_sides AS (
            SELECT pair_id, benchmark_id FROM base INTERSECT SELECT pair_id, benchmark_id FROM post
        )
        SELECT u.pair_id, u.benchmark_id, u.side, u.sample_id, u.question, u.prompt
        FROM (SELECT * FROM base UNION ALL SELECT * FROM post) u
        JOIN both_sides USING (pair_id, benchmark_id)
        ORDER BY u.pair_id, u.benchmark_id, u.side, u.sample_id
        """
    ).fetchall()
    groups: dict[tuple[int, int], dict[str, list]] = {}
    for pair_id, benchmark_id, side, sample_id, question, prompt in rows:
        group = groups.setdefault((pair_id, benchmark_id), {"base": [], "post": []})
        group[side].append((sample_id, question, prompt))
    links = [
        (pair_id, benchmark_id, base_id, post_id)
        for (pair_id, benchmark_id), group in groups.items()
        for base_id, post_id in link_candidates(group["base"], group["post"])
    ]
    if links:
        duck.executemany(
            "INSERT INTO sample_links (pair_id, benchmark_id, base_sample_id, post_sample_id) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            links,
        )
    return len(links)


def _refresh_seed_transitions(duck, touched: str, *, only_paired: bool) -> None:
    """A model against itself across seeds, for every touched (model, benchmark).

    The noise floor is shown only for pairs, so an import skips models in no pair; ``add_pair``
    computes its two models' counts when it pairs them.
    """
    paired = (
        "WHERE model_id IN (SELECT base_model_id FROM pairs UNION SELECT post_model_id FROM pairs)"
        if only_paired
        else ""
    )
    duck.execute(
        f"CREATE OR REPLACE TEMP TABLE touched_mb AS "
        f"SELECT DISTINCT model_id, benchmark_id FROM {touched} {paired}"
    )
    duck.execute(
        "DELETE FROM seed_transitions USING touched_mb t WHERE seed_transitions.model_id = t.model_id "
        "AND seed_transitions.benchmark_id = t.benchmark_id"
    )
    duck.execute(
        f"""
        INSERT INTO seed_transitions
        SELECT a.model_id, a.benchmark_id, a.seed, b.seed, coalesce(a.num_choices, b.num_choices, 0),
               count(*) FILTER (WHERE NOT a.correct AND NOT b.correct),
               count(*) FILTER (WHERE NOT a.correct AND b.correct),
               count(*) FILTER (WHERE a.correct AND NOT b.correct),
               count(*) FILTER (WHERE a.correct AND b.correct)
        FROM touched_mb t
        JOIN results a ON a.model_id = t.model_id AND a.benchmark_id = t.benchmark_id
        JOIN results b ON b.model_id = a.model_id AND b.benchmark_id = a.benchmark_id
         AND b.sample_id = a.sample_id AND b.seed > a.seed
        WHERE (a.doc_hash IS NULL OR b.doc_hash IS NULL OR a.doc_hash = b.doc_hash)
          AND a.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%'
        GROUP BY ALL
        """
    )
    duck.execute("DROP TABLE touched_mb")


def add_pair(
    conn: Connection, base: str, post: str, *, label: str | None, stage: str | None
) -> tuple[int, bool, dict]:
    """Create (or update the label of) the pair base -> post and materialize its counts.

    Returns (pair id, created, unpaired counts). Unknown model names raise InputError.
    """
    duck = _duck(conn)
    if base == post:
        raise InputError(f"a pair needs two different models, got {base!r} twice")
    ids = {}
    for role, name in (("base", base), ("post", post)):
        row = duck.execute("SELECT id FROM models WHERE name = ?", [name]).fetchone()
        if row is None:
            known = [
                r[0]
                for r in duck.execute("SELECT name FROM models ORDER BY name LIMIT 20").fetchall()
            ]
            hint = f"known models: {', '.join(known)}" if known else "no models imported yet"
            raise InputError(f"unknown {role} model {name!r}; import its results first ({hint})")
        ids[role] = row[0]
    existing = duck.execute(
        "SELECT id FROM pairs WHERE base_model_id = ? AND post_model_id = ?",
        [ids["base"], ids["post"]],
    ).fetchone()
    if existing:
        pair_id, created = existing[0], False
        if label is not None or stage is not None:
            duck.execute(
                "UPDATE pairs SET label = coalesce(?, label), stage = coalesce(?, stage) WHERE id = ?",
                [label, stage, pair_id],
            )
    else:
        pair_id = duck.execute(
            "INSERT INTO pairs (base_model_id, post_model_id, label, stage) VALUES (?, ?, ?, ?) RETURNING id",
            [ids["base"], ids["post"], label, stage],
        ).fetchone()[0]
        created = True
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE pair_units AS SELECT DISTINCT model_id, benchmark_id, seed "
        "FROM results WHERE model_id IN (?, ?)",
        [ids["base"], ids["post"]],
    )
    _, unpaired = refresh_counts(conn, "pair_units", pair_ids=[pair_id])
    duck.execute("DROP TABLE pair_units")
    return (
        pair_id,
        created,
        unpaired.get(pair_id, {"only_base": 0, "only_post": 0, "mismatched": 0, "ambiguous": 0}),
    )
