"""Reads behind the map and the pair lists. The map reads only the materialized count tables."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import duckdb
from forgetmap.core.answer_status import CAUSE_BITS, NO_ANSWER, REFUSED, TRUNCATED
from forgetmap.core.sample_marks import AMBIGUOUS_MARK
from forgetmap.db.pairing import CELLS, JOINT_COLUMNS
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection

if TYPE_CHECKING:  # the map's reads give numpy columns: `forgetmap map` loads no Arrow
    import numpy as np
    import pyarrow as pa

Columns = dict[str, "np.ndarray"]
"""A result as numpy columns of equal length, by name; a column holding NULLs is an object array
with None there (integers included)."""


def numpy_columns(relation: duckdb.DuckDBPyConnection | duckdb.DuckDBPyRelation) -> Columns:
    """A DuckDB result as ``Columns`` (its ``fetchnumpy``: neither Arrow nor pandas is loaded)."""
    import numpy as np  # here: `pair add` reads through this module and needs no numpy (60 ms)

    out = {}
    for name, values in relation.fetchnumpy().items():
        if isinstance(values, np.ma.MaskedArray):
            plain = values.data.astype(object)
            plain[values.mask] = None
            values = plain
        out[name] = values
    return out


def row_count(columns: Columns) -> int:
    """Rows of ``Columns`` (0 when there are no columns)."""
    return len(next(iter(columns.values()))) if columns else 0


KEPT_CAUSES = (
    "(SELECT pair_id, benchmark_id, seed, num_choices, sum(n_00)::BIGINT AS n_00, "
    "sum(n_01)::BIGINT AS n_01, sum(n_10)::BIGINT AS n_10, sum(n_11)::BIGINT AS n_11 "
    "FROM transitions WHERE (causes & $mask) = 0 GROUP BY pair_id, benchmark_id, seed, num_choices)"
)
"""SQL: the transition counts per (pair, benchmark, seed, k), the samples of every cause not in
``$mask`` together."""


def pair_transitions(conn: Connection, pair_id: int | None = None, *, exclude: int = 0) -> pa.Table:
    """Every (pair, benchmark, seed, k-group) row of transition counts with names attached;
    ``exclude``: the bits of the causes whose samples are left out."""
    sql = f"""
        SELECT t.pair_id, p.label, p.stage, mb.name AS base, mp.name AS post,
               p.base_model_id, p.post_model_id, t.benchmark_id,
               b.name AS benchmark, b.category, t.seed, t.num_choices AS k,
               t.n_00, t.n_01, t.n_10, t.n_11,
               coalesce(c.only_base, 0) AS only_base, coalesce(c.only_post, 0) AS only_post,
               coalesce(c.mismatched, 0) AS mismatched
        FROM {KEPT_CAUSES} t
        JOIN pairs p ON p.id = t.pair_id
        JOIN models mb ON mb.id = p.base_model_id
        JOIN models mp ON mp.id = p.post_model_id
        JOIN benchmarks b ON b.id = t.benchmark_id
        LEFT JOIN coverage c
          ON c.pair_id = t.pair_id AND c.benchmark_id = t.benchmark_id AND c.seed = t.seed
        WHERE $pair_id IS NULL OR t.pair_id = $pair_id
        ORDER BY t.pair_id, b.name, t.seed, t.num_choices
    """
    return conn.sql(sql, params={"pair_id": pair_id, "mask": exclude}).to_arrow_table()


CAUSE_COUNTS = {
    "n_10_cut": ("n_10", TRUNCATED),
    "n_cut": ("n_00 + t.n_01 + t.n_10 + t.n_11", TRUNCATED),
    "n_10_no_answer": ("n_10", NO_ANSWER),
    "n_01_no_answer": ("n_01", NO_ANSWER),
    "n_10_refused": ("n_10", REFUSED),
}
"""Of what a count row keeps: the samples of one cell (or of all four) with a cause on either
side (``forgetmap.core.answer_status``)."""


COUNT_SOURCES = ("", "scored_")
"""Where counts are read: the stored tables, or a score set's temporary ones
(``forgetmap.db.scored``, built on the same connection first)."""


def _counts_table(name: str, source: str) -> str:
    """The table of counts ``name`` (transitions, cross_seed_cells, seed_transitions) to read."""
    if source not in COUNT_SOURCES:
        raise ValueError(f"unknown count source {source!r}")
    return f"{source}{name}"


def _cells() -> str:
    """A (pair, benchmark, seed, k) group's four cells summed over its ``causes`` rows that share
    no bit with ``$mask`` (the causes left out), and, of what is kept, the counts of
    ``CAUSE_COUNTS``. Its GROUP BY is the caller's."""
    kept = "(t.causes & $mask) = 0"
    cells = [f"coalesce(sum(t.n_{c}) FILTER (WHERE {kept}), 0)::BIGINT AS n_{c}" for c in CELLS]
    causes = [
        f"coalesce(sum(t.{cell}) FILTER (WHERE {kept} AND (t.causes & {CAUSE_BITS[cause]}) <> 0), "
        f"0)::BIGINT AS {name}"
        for name, (cell, cause) in CAUSE_COUNTS.items()
    ]
    return ", ".join(cells + causes)


def _in_order(columns: Columns, keys: tuple[str, ...]) -> Columns:
    """``columns`` with their rows in the order of ``keys`` (the most significant first), sorted
    only when they are not in it already (one pass per key to tell). DuckDB's ORDER BY took 5 of
    the 9 ms of reading a 500-pair map's 50,000 count rows; numpy's sort, 3.6."""
    import numpy as np

    n = row_count(columns)
    tied = np.ones(max(n - 1, 0), dtype=bool)  # rows i and i + 1 equal on the keys so far
    for key in keys:
        step = np.diff(columns[key].astype(np.int64))
        if (step[tied] < 0).any():
            order = np.lexsort([columns[k] for k in reversed(keys)])
            return {name: values[order] for name, values in columns.items()}
        tied &= step == 0
    return columns


def transition_counts(
    conn: Connection,
    pair_id: int | None = None,
    pair_ids: list[int] | None = None,
    *,
    exclude: int = 0,
    source: str = "",
) -> Columns:
    """The map's input: every (pair, benchmark, seed, k-group) row of counts with its coverage,
    ids only (names come from :func:`pair_names` and :func:`benchmark_names`: joining and sorting
    strings here cost more than the rest of the query), ordered by (pair, benchmark id, seed, k).
    ``exclude``: the bits of the causes whose samples are left out (``_cells``); ``source``: the
    counts to read (``_counts_table``)."""
    sql = f"""
        SELECT t.pair_id, t.benchmark_id, t.seed, t.num_choices AS k, {_cells()},
               any_value(coalesce(c.only_base, 0)) AS only_base,
               any_value(coalesce(c.only_post, 0)) AS only_post,
               any_value(coalesce(c.mismatched, 0)) AS mismatched
        FROM {_counts_table("transitions", source)} t
        LEFT JOIN coverage c
          ON c.pair_id = t.pair_id AND c.benchmark_id = t.benchmark_id AND c.seed = t.seed
        WHERE ($pair_id IS NULL OR t.pair_id = $pair_id)
          AND ($all OR t.pair_id IN (SELECT unnest($ids)))
        GROUP BY t.pair_id, t.benchmark_id, t.seed, t.num_choices
        ORDER BY t.pair_id, t.benchmark_id, t.seed, t.num_choices
    """
    params = {
        "pair_id": pair_id,
        "all": pair_ids is None,
        "ids": list(pair_ids or []),
        "mask": exclude,
    }
    return numpy_columns(conn.sql(sql, params=params))


def pair_names(conn: Connection) -> Columns:
    """Every pair's label, stage, model ids and model names, ordered by pair id."""
    sql = (
        """
        SELECT p.id AS pair_id, p.label, p.stage, p.base_model_id, p.post_model_id,
               mb.name AS base, mp.name AS post
        FROM pairs p JOIN models mb ON mb.id = p.base_model_id """
        """JOIN models mp ON mp.id = p.post_model_id
        ORDER BY p.id
    """
    )
    return numpy_columns(conn.sql(sql))


def benchmark_names(conn: Connection) -> Columns:
    """Every benchmark's id, name, category and full size (NULL: not known), ordered by id."""
    return numpy_columns(
        conn.sql("SELECT id, name, category, full_size FROM benchmarks ORDER BY id")
    )


def cross_seed_cells(
    conn: Connection,
    pair_id: int | None = None,
    pair_ids: list[int] | None = None,
    *,
    exclude: int = 0,
    source: str = "",
) -> Columns:
    """The joint cells of the paired samples under two seeds (forgetmap.db.pairing), for every pair,
    just ``pair_id``, or ``pair_ids``: the map's interval needs them beside the transitions.
    ``exclude``: the bits of the causes whose samples are left out (under either seed)."""
    joint = ", ".join(f"sum({c})::BIGINT AS {c}" for c in JOINT_COLUMNS.split(", "))
    sql = f"""
        SELECT pair_id, benchmark_id, seed_a, seed_b, num_choices AS k, {joint}
        FROM {_counts_table("cross_seed_cells", source)}
        WHERE ($pair_id IS NULL OR pair_id = $pair_id)
          AND ($all OR pair_id IN (SELECT unnest($ids))) AND (causes & $mask) = 0
        GROUP BY pair_id, benchmark_id, seed_a, seed_b, num_choices
    """
    params = {
        "pair_id": pair_id,
        "all": pair_ids is None,
        "ids": list(pair_ids or []),
        "mask": exclude,
    }
    return numpy_columns(conn.sql(sql, params=params))


def seed_transitions_for_pairs(conn: Connection, *, exclude: int = 0, source: str = "") -> Columns:
    """Seed-vs-seed counts of every model that is the base or post side of some pair; ``exclude``:
    the bits of the causes whose samples are left out (an answer with one under either seed)."""
    sql = f"""
        SELECT s.model_id, s.benchmark_id, s.seed_a, s.seed_b, s.num_choices AS k,
               sum(s.n_00)::BIGINT AS n_00, sum(s.n_01)::BIGINT AS n_01,
               sum(s.n_10)::BIGINT AS n_10, sum(s.n_11)::BIGINT AS n_11
        FROM {_counts_table("seed_transitions", source)} s
        WHERE s.model_id IN (SELECT base_model_id FROM pairs UNION SELECT post_model_id FROM pairs)
          AND (s.causes & $mask) = 0
        GROUP BY s.model_id, s.benchmark_id, s.seed_a, s.seed_b, s.num_choices
        ORDER BY s.model_id, s.benchmark_id, s.seed_a, s.seed_b, s.num_choices
    """
    return numpy_columns(conn.sql(sql, params={"mask": exclude}))


PAIRING_FIELDS = (
    "benchmark",
    "category",
    "seeds",
    "paired",
    "only_base",
    "only_post",
    "ambiguous",
    "mismatched",
    "by_id",
    "by_question",
    "by_text",
)


def pairing_report(conn: Connection, pair_id: int) -> list[dict[str, Any]]:
    """How the samples of a pair paired, per benchmark (summed over seeds): paired, only in base,
    only in post, ambiguous (a key shared by several samples of one file), mismatched documents,
    and the rule that paired them (the file's id, the question key, the question text)."""
    rows = conn.execute(
        """
        SELECT b.name, b.category, count(*) AS seeds,
               sum(c.paired), sum(c.only_base), sum(c.only_post), sum(coalesce(c.ambiguous, 0)),
               sum(c.mismatched),
               sum(c.paired - coalesce(c.by_question, 0) - coalesce(c.by_text, 0)),
               sum(coalesce(c.by_question, 0)), sum(coalesce(c.by_text, 0))
        FROM coverage c JOIN benchmarks b ON b.id = c.benchmark_id
        WHERE c.pair_id = ?
        GROUP BY b.name, b.category
        ORDER BY b.category, b.name
        """,
        [pair_id],
    ).fetchall()
    return [
        {
            k: (v if i < 2 else int(v))
            for i, (k, v) in enumerate(zip(PAIRING_FIELDS, r, strict=True))
        }
        for r in rows
    ]


def pairing_rule(row: dict[str, Any]) -> str:
    """The rule(s) that paired a benchmark's samples, in words."""
    rules = [
        name
        for name, count in (
            ("id", row["by_id"]),
            ("question key", row["by_question"]),
            ("question text", row["by_text"]),
        )
        if count
    ]
    return " + ".join(rules) if rules else "none"


def list_pairs(conn: Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        """
        WITH t AS (SELECT pair_id, count(DISTINCT benchmark_id) AS benchmarks,
                          count(DISTINCT seed) AS seeds
                   FROM transitions GROUP BY pair_id),
             c AS (SELECT pair_id, sum(paired) AS paired FROM coverage GROUP BY pair_id)
        SELECT p.id, mb.name, mp.name, p.label, p.stage, p.created_at, mb.family, mb.size_params,
               coalesce(t.benchmarks, 0), coalesce(t.seeds, 0), coalesce(c.paired, 0)
        FROM pairs p
        JOIN models mb ON mb.id = p.base_model_id
        JOIN models mp ON mp.id = p.post_model_id
        LEFT JOIN t ON t.pair_id = p.id
        LEFT JOIN c ON c.pair_id = p.id
        ORDER BY p.id
        """
    ).fetchall()
    return [
        {
            "id": r[0],
            "base": r[1],
            "post": r[2],
            "label": r[3],
            "stage": r[4],
            "created_at": r[5].isoformat() if r[5] else None,
            "family": r[6],
            "size_params": r[7],
            "benchmarks": r[8],
            "seeds": r[9],
            "paired_samples": int(r[10]),
        }
        for r in rows
    ]


# ------------------------------------------------------------------------------ drill-down

TRANSITIONS = {"10": (True, False), "01": (False, True), "11": (True, True), "00": (False, False)}


def pair_info(conn: Connection, pair_id: int) -> dict[str, Any] | None:
    row = conn.execute(
        """
        SELECT p.id, p.base_model_id, p.post_model_id, mb.name, mp.name, p.label, p.stage
        FROM pairs p JOIN models mb ON mb.id = p.base_model_id """
        """JOIN models mp ON mp.id = p.post_model_id
        WHERE p.id = ?
        """,
        [pair_id],
    ).fetchone()
    if row is None:
        return None
    keys = ("id", "base_model_id", "post_model_id", "base", "post", "label", "stage")
    return dict(zip(keys, row, strict=True))


def benchmark_ids(
    conn: Connection, *, name: str | None = None, category: str | None = None
) -> list[int]:
    """Ids of one benchmark by name, or of every benchmark in a category."""
    if name is not None:
        rows = conn.execute("SELECT id FROM benchmarks WHERE name = ?", [name]).fetchall()
    else:
        rows = conn.execute("SELECT id FROM benchmarks WHERE category = ?", [category]).fetchall()
    return [r[0] for r in rows]


def most_forgotten(conn: Connection, *, limit: int = 50) -> list[dict[str, Any]]:
    """Samples forgotten (1->0 in a majority of paired seeds) by the most pairs."""
    rows = conn.execute(
        f"""
        WITH per_pair AS (
            SELECT pr.id AS pair_id, b.benchmark_id, b.sample_id,
                   avg((b.correct AND NOT p.correct)::INT) AS forgot_share
            FROM pairs pr
            JOIN results b ON b.model_id = pr.base_model_id
            LEFT JOIN sample_links l ON l.pair_id = pr.id AND l.benchmark_id = b.benchmark_id
                                    AND l.base_sample_id = b.sample_id
            JOIN results p ON p.model_id = pr.post_model_id AND p.benchmark_id = b.benchmark_id
                          AND p.seed = b.seed AND p.sample_id = coalesce(l.post_sample_id, b.sample_id)
            WHERE b.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%'
            GROUP BY ALL
        )
        SELECT bm.name, bm.category, f.sample_id, count(*) AS pairs, list(f.pair_id ORDER BY f.pair_id),
               (SELECT coalesce(any_value(r.question), any_value({full_prompt("r")})) FROM results r
                 WHERE r.benchmark_id = f.benchmark_id AND r.sample_id = f.sample_id) AS prompt
        FROM per_pair f JOIN benchmarks bm ON bm.id = f.benchmark_id
        WHERE f.forgot_share >= 0.5
        GROUP BY bm.name, bm.category, f.benchmark_id, f.sample_id
        ORDER BY pairs DESC, bm.name, f.sample_id
        LIMIT ?
        """,  # noqa: E501
        [limit],
    ).fetchall()
    keys = ("benchmark", "category", "sample_id", "pairs", "pair_ids", "prompt")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def models(conn: Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT id, name, family, size_params, fingerprint FROM models ORDER BY name"
    ).fetchall()
    return [
        dict(zip(("id", "name", "family", "size_params", "fingerprint"), r, strict=True))
        for r in rows
    ]


def benchmarks(conn: Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT name, category, num_choices FROM benchmarks ORDER BY name"
    ).fetchall()
    return [{"name": n, "category": c, "num_choices": k} for n, c, k in rows]


def pair_benchmarks(conn: Connection, pair_id: int) -> list[tuple[str, str]]:
    """(name, category) of the benchmarks a pair has paired samples on."""
    return conn.execute(
        "SELECT DISTINCT b.name, b.category "
        "FROM transitions t JOIN benchmarks b ON b.id = t.benchmark_id "
        "WHERE t.pair_id = ? ORDER BY b.name",
        [pair_id],
    ).fetchall()


def pair_id_by_names(conn: Connection, base: str, post: str) -> int | None:
    row = conn.execute(
        "SELECT p.id FROM pairs p JOIN models b ON b.id = p.base_model_id "
        "JOIN models q ON q.id = p.post_model_id WHERE b.name = ? AND q.name = ?",
        [base, post],
    ).fetchall()
    return row[0][0] if row else None


def jobs_summary(conn: Connection) -> list[dict[str, Any]]:
    """Every job, newest first: status, shard counts, owner, the request it was made from
    (``payload``) and, for a checkpoint of a series, the series' name and the step."""
    rows = conn.execute(
        """
            SELECT j.id, j.status, j.created_at, j.kind, count(s.id),
                   count(s.id) FILTER (WHERE s.status IN ('done', 'reused')),
                   count(s.id) FILTER (WHERE s.status = 'failed'), j.owner,
                   coalesce(sum(s.resends), 0), j.payload, w.series, w.step
            FROM jobs j LEFT JOIN shards s ON s.job_id = j.id
            LEFT JOIN (SELECT ws.job_id, min(se.name) AS series, min(ws.step) AS step
                       FROM watch_submissions ws JOIN series se ON se.id = ws.series_id
                       GROUP BY ws.job_id) w ON w.job_id = j.id
            GROUP BY ALL ORDER BY j.id DESC
            """
    ).fetchall()
    return [
        {
            "id": r[0],
            "status": r[1],
            "created_at": r[2].isoformat(),
            "kind": r[3],
            "shards": r[4],
            "finished": r[5],
            "failed": r[6],
            "owner": r[7],
            "resends": int(r[8]),
            "payload": json.loads(r[9]),
            "series": r[10],
            "step": r[11],
        }
        for r in rows
    ]


def job_series(conn: Connection, job_id: int) -> tuple[int, str, int] | None:
    """(series id, name, step) when the job evaluates a checkpoint of a series, else None."""
    row = conn.execute(
        "SELECT se.id, se.name, ws.step FROM watch_submissions ws "
        "JOIN series se ON se.id = ws.series_id "
        "WHERE ws.job_id = ? ORDER BY ws.step LIMIT 1",
        [job_id],
    ).fetchone()
    return (int(row[0]), row[1], int(row[2])) if row else None


def model_specs(conn: Connection, names: list[str]) -> dict[str, dict[str, Any]]:
    """The checkpoint spec (path, revision, ...) a job stored for each named model, if any."""
    if not names:
        return {}
    rows = conn.execute(
        f"SELECT name, spec FROM models WHERE spec IS NOT NULL AND name IN "
        f"({', '.join('?' for _ in names)})",
        names,
    ).fetchall()
    return {name: json.loads(spec) for name, spec in rows}


def unit_counts(
    conn: Connection, pair_ids: list[int] | None = None, *, exclude: int = 0, source: str = ""
) -> Columns:
    """The category map's input: every (pair, benchmark, seed, k-group) row of transition counts
    of the given pairs (None: all), ids only, ordered by (pair, benchmark id, seed, k);
    ``exclude``: the bits of the causes whose samples are left out (``_cells``)."""
    where = "" if pair_ids is None else "WHERE t.pair_id IN (SELECT unnest($ids))"
    sql = f"""
        SELECT t.pair_id, t.benchmark_id, t.seed, t.num_choices AS k, {_cells()}
        FROM {_counts_table("transitions", source)} t {where}
        GROUP BY t.pair_id, t.benchmark_id, t.seed, t.num_choices
    """
    params = {"mask": exclude} if pair_ids is None else {"ids": list(pair_ids), "mask": exclude}
    columns = numpy_columns(conn.sql(sql, params=params))
    return _in_order(columns, ("pair_id", "benchmark_id", "seed", "k"))


def unpaired_counts(conn: Connection, pair_ids: list[int] | None = None) -> Columns:
    """Per (pair, benchmark) of the given pairs (None: all): the most samples of one seed that
    only one of the two models holds (``coverage``), ordered by (pair, benchmark id)."""
    where = "" if pair_ids is None else "WHERE pair_id IN (SELECT unnest($ids))"
    sql = f"""
        SELECT pair_id, benchmark_id, max(only_base + only_post) AS unpaired
        FROM coverage {where} GROUP BY pair_id, benchmark_id ORDER BY pair_id, benchmark_id
    """
    params = {} if pair_ids is None else {"ids": list(pair_ids)}
    return numpy_columns(conn.sql(sql, params=params))


def pair_fingerprints(conn: Connection) -> dict[int, int]:
    """Per pair, a hash of everything its map records depend on: its transition and cross-seed
    cell counts, the seed-vs-seed counts of both its models (the noise floor), its names, label
    and stage, the benchmarks' names, categories and full sizes, and its coverage counts (a
    model holding part of the other's questions is partial). A pair whose hash is unchanged has
    unchanged records."""
    rows = conn.execute(
        f"""
        WITH t AS (
            SELECT pair_id, count(*) AS n,
                   bit_xor(hash(benchmark_id, seed, num_choices, causes, n_00, n_01, n_10, n_11)) AS h
            FROM transitions GROUP BY pair_id
        ), s AS (
            SELECT model_id, count(*) AS n,
                   bit_xor(hash(benchmark_id, seed_a, seed_b, num_choices, causes, n_00, n_01, n_10, n_11)) AS h
            FROM seed_transitions GROUP BY model_id
        ), x AS (
            SELECT pair_id, count(*) AS n,
                   bit_xor(hash(benchmark_id, seed_a, seed_b, num_choices, causes, {JOINT_COLUMNS})) AS h
            FROM cross_seed_cells GROUP BY pair_id
        ), b AS (
            SELECT count(*) AS n, coalesce(bit_xor(hash(id, name, category, full_size)), 0) AS h
            FROM benchmarks
        ), c AS (
            SELECT pair_id, bit_xor(hash(benchmark_id, seed, only_base, only_post, mismatched)) AS h
            FROM coverage GROUP BY pair_id
        )
        SELECT p.id, hash(t.n, t.h, x.n, x.h, sb.n, sb.h, sp.n, sp.h, b.n, b.h, c.h, p.label,
                          p.stage, mb.name, mp.name)
        FROM pairs p
        JOIN models mb ON mb.id = p.base_model_id
        JOIN models mp ON mp.id = p.post_model_id
        LEFT JOIN t ON t.pair_id = p.id
        LEFT JOIN s sb ON sb.model_id = p.base_model_id
        LEFT JOIN s sp ON sp.model_id = p.post_model_id
        LEFT JOIN c ON c.pair_id = p.id
        LEFT JOIN x ON x.pair_id = p.id
        CROSS JOIN b
        """  # noqa: E501
    ).fetchall()
    return dict(rows)
