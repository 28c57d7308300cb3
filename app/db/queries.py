"""Reads behind the map and the pair lists. The map reads only the materialized count tables."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from forgetmap.core.sample_marks import AMBIGUOUS_MARK
from forgetmap.db.pairing import JOINT_COLUMNS
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection
from forgetmap.db.texts import answer_files, read_texts

if TYPE_CHECKING:  # the map's reads give numpy columns: `forgetmap map` loads no Arrow
    import numpy as np
    import pyarrow as pa

Columns = dict[str, "np.ndarray"]
"""A result as numpy columns of equal length, by name; a column holding NULLs is an object array
with None there (integers included)."""


def numpy_columns(relation) -> Columns:
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


def pair_transitions(conn: Connection, pair_id: int | None = None) -> pa.Table:
    """Every (pair, benchmark, seed, k-group) row of transition counts with names attached."""
    sql = """
        SELECT t.pair_id, p.label, p.stage, mb.name AS base, mp.name AS post,
               p.base_model_id, p.post_model_id, t.benchmark_id,
               b.name AS benchmark, b.category, t.seed, t.num_choices AS k,
               t.n_00, t.n_01, t.n_10, t.n_11,
               coalesce(c.only_base, 0) AS only_base, coalesce(c.only_post, 0) AS only_post,
               coalesce(c.mismatched, 0) AS mismatched
        FROM transitions t
        JOIN pairs p ON p.id = t.pair_id
        JOIN models mb ON mb.id = p.base_model_id
        JOIN models mp ON mp.id = p.post_model_id
        JOIN benchmarks b ON b.id = t.benchmark_id
        LEFT JOIN coverage c
          ON c.pair_id = t.pair_id AND c.benchmark_id = t.benchmark_id AND c.seed = t.seed
        WHERE $pair_id IS NULL OR t.pair_id = $pair_id
        ORDER BY t.pair_id, b.name, t.seed, t.num_choices
    """
    return conn.sql(sql, params={"pair_id": pair_id}).to_arrow_table()


def _cells(exclude_truncated: bool) -> str:
    """A count row's four cells (``exclude_truncated``: less the samples with an answer cut off on
    either side) and, of what is counted, the cut-off 1->0 flips and all cut-off samples. Spelled
    out for each case rather than switched by a parameter per row."""
    if exclude_truncated:
        return """t.n_00 - t.t_00 AS n_00, t.n_01 - t.t_01 AS n_01, t.n_10 - t.t_10 AS n_10,
                  t.n_11 - t.t_11 AS n_11, 0 AS n_10_cut, 0 AS n_cut"""
    return """t.n_00, t.n_01, t.n_10, t.n_11, t.t_10 AS n_10_cut,
              t.t_00 + t.t_01 + t.t_10 + t.t_11 AS n_cut"""


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
    exclude_truncated: bool = False,
) -> Columns:
    """The map's input: every (pair, benchmark, seed, k-group) row of counts with its coverage,
    ids only (names come from :func:`pair_names` and :func:`benchmark_names`: joining and sorting
    strings here cost more than the rest of the query), ordered by (pair, benchmark id, seed, k).
    ``exclude_truncated``: the samples with an answer cut off left out (``_cells``)."""
    sql = f"""
        SELECT t.pair_id, t.benchmark_id, t.seed, t.num_choices AS k, {_cells(exclude_truncated)},
               coalesce(c.only_base, 0) AS only_base, coalesce(c.only_post, 0) AS only_post,
               coalesce(c.mismatched, 0) AS mismatched
        FROM transitions t
        LEFT JOIN coverage c
          ON c.pair_id = t.pair_id AND c.benchmark_id = t.benchmark_id AND c.seed = t.seed
        WHERE ($pair_id IS NULL OR t.pair_id = $pair_id)
          AND ($all OR t.pair_id IN (SELECT unnest($ids)))
        ORDER BY t.pair_id, t.benchmark_id, t.seed, t.num_choices
    """
    params = {"pair_id": pair_id, "all": pair_ids is None, "ids": list(pair_ids or [])}
    return numpy_columns(conn.sql(sql, params=params))


def pair_names(conn: Connection) -> Columns:
    """Every pair's label, stage, model ids and model names, ordered by pair id."""
    sql = """
        SELECT p.id AS pair_id, p.label, p.stage, p.base_model_id, p.post_model_id,
               mb.name AS base, mp.name AS post
        FROM pairs p JOIN models mb ON mb.id = p.base_model_id JOIN models mp ON mp.id = p.post_model_id
        ORDER BY p.id
    """
    return numpy_columns(conn.sql(sql))


def benchmark_names(conn: Connection) -> Columns:
    """Every benchmark's id, name, category and full size (NULL: not known), ordered by id."""
    return numpy_columns(
        conn.sql("SELECT id, name, category, full_size FROM benchmarks ORDER BY id")
    )


def cross_seed_cells(
    conn: Connection, pair_id: int | None = None, pair_ids: list[int] | None = None
) -> Columns:
    """The joint cells of the paired samples under two seeds (forgetmap.db.pairing), for every pair,
    just ``pair_id``, or ``pair_ids``: the map's interval needs them beside the transitions."""
    sql = f"""
        SELECT pair_id, benchmark_id, seed_a, seed_b, num_choices AS k, {JOINT_COLUMNS}
        FROM cross_seed_cells
        WHERE ($pair_id IS NULL OR pair_id = $pair_id)
          AND ($all OR pair_id IN (SELECT unnest($ids)))
    """
    params = {"pair_id": pair_id, "all": pair_ids is None, "ids": list(pair_ids or [])}
    return numpy_columns(conn.sql(sql, params=params))


def seed_transitions_for_pairs(conn: Connection) -> Columns:
    """Seed-vs-seed counts of every model that is the base or post side of some pair."""
    sql = """
        SELECT s.model_id, s.benchmark_id, s.seed_a, s.seed_b, s.num_choices AS k,
               s.n_00, s.n_01, s.n_10, s.n_11
        FROM seed_transitions s
        WHERE s.model_id IN (SELECT base_model_id FROM pairs UNION SELECT post_model_id FROM pairs)
        ORDER BY s.model_id, s.benchmark_id, s.seed_a, s.seed_b, s.num_choices
    """
    return numpy_columns(conn.sql(sql))


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


def pairing_report(conn: Connection, pair_id: int) -> list[dict]:
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


def pairing_rule(row: dict) -> str:
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


def list_pairs(conn: Connection) -> list[dict]:
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


def pair_info(conn: Connection, pair_id: int) -> dict | None:
    row = conn.execute(
        """
        SELECT p.id, p.base_model_id, p.post_model_id, mb.name, mp.name, p.label, p.stage
        FROM pairs p JOIN models mb ON mb.id = p.base_model_id JOIN models mp ON mp.id = p.post_model_id
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


def _like(q: str) -> str:
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _flip_filter(
    conn: Connection,
    pair: dict,
    benchmarks: list[int] | None,
    transition: str,
    q: str | None,
    exclude_truncated: bool = False,
):
    """FROM/WHERE shared by the listing and its count; values go in as parameters."""
    pre, post = TRANSITIONS[transition]
    # a post sample linked by question text (sample_links) stands in for the base's id; samples
    # whose key is ambiguous never pair (see forgetmap.core.sample_identity)
    sql = f"""
        FROM results b
        LEFT JOIN sample_links l ON l.pair_id = ? AND l.benchmark_id = b.benchmark_id
                                AND l.base_sample_id = b.sample_id
        JOIN results p ON p.model_id = ? AND p.benchmark_id = b.benchmark_id
                      AND p.seed = b.seed AND p.sample_id = coalesce(l.post_sample_id, b.sample_id)
        JOIN benchmarks bm ON bm.id = b.benchmark_id
        WHERE b.model_id = ? AND b.correct = ? AND p.correct = ?
          AND (b.doc_hash IS NULL OR p.doc_hash IS NULL OR b.doc_hash = p.doc_hash)
          AND b.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%'
    """
    params: list = [pair["id"], pair["post_model_id"], pair["base_model_id"], pre, post]
    if exclude_truncated:
        sql += " AND NOT (coalesce(b.truncated, false) OR coalesce(p.truncated, false))"
    if benchmarks is not None:
        sql += f" AND b.benchmark_id IN ({', '.join('?' for _ in benchmarks) or 'NULL'})"
        params += benchmarks
    if q:
        sql += (
            f" AND (({full_prompt('b')}) ILIKE ? ESCAPE '\\' OR b.response ILIKE ? ESCAPE '\\'"
            " OR p.response ILIKE ? ESCAPE '\\'"
        )
        params += [_like(q)] * 3
        files = answer_files(conn)
        if files:
            # long answers lie in the answer files (app/db/texts.py)
            matching = "(SELECT ref FROM read_parquet(?) WHERE text ILIKE ? ESCAPE '\\')"
            sql += f" OR b.response_ref IN {matching} OR p.response_ref IN {matching}"
            params += [files, _like(q)] * 2
        sql += ")"
    return sql, params


def flipped_samples(
    conn: Connection,
    pair: dict,
    *,
    benchmarks: list[int] | None,
    transition: str,
    q: str | None,
    page: int,
    page_size: int,
    exclude_truncated: bool = False,
) -> tuple[int, list[dict]]:
    """Samples of a pair with the given transition in at least one seed, most seeds first.

    Returns (total number of samples, rows of this page). A row is one (benchmark, sample);
    ``truncated``: its answer was cut off (either side) in a seed with the transition.
    ``exclude_truncated`` leaves out the seeds where it was.
    """
    where, params = _flip_filter(conn, pair, benchmarks, transition, q, exclude_truncated)
    total = conn.execute(
        f"SELECT count(*) FROM (SELECT DISTINCT b.benchmark_id, b.sample_id {where})", params
    ).fetchone()[0]
    rows = conn.execute(
        f"""
        SELECT bm.name, bm.category, b.sample_id, list(b.seed ORDER BY b.seed) AS seeds,
               any_value({full_prompt("b")}) AS prompt, any_value(b.gold) AS gold,
               any_value(b.prediction) AS base_prediction, any_value(p.prediction) AS post_prediction,
               coalesce(any_value(b.question), any_value(p.question)) AS question,
               bool_or(coalesce(b.truncated, false) OR coalesce(p.truncated, false)) AS truncated
        {where}
        GROUP BY bm.name, bm.category, b.sample_id
        ORDER BY len(seeds) DESC, bm.name, b.sample_id
        LIMIT ? OFFSET ?
        """,
        [*params, page_size, (page - 1) * page_size],
    ).fetchall()
    keys = (
        "benchmark",
        "category",
        "sample_id",
        "seeds",
        "prompt",
        "gold",
        "base_prediction",
        "post_prediction",
        "question",
        "truncated",
    )
    return int(total), [dict(zip(keys, r, strict=True)) for r in rows]


def sample_detail(conn: Connection, pair: dict, benchmark_id: int, sample_id: str) -> list[dict]:
    """Both models' rows of one sample, per seed (a seed present on one side only shows one)."""
    rows = conn.execute(
        f"""
        SELECT coalesce(b.seed, p.seed) AS seed,
               coalesce({full_prompt("b")}, {full_prompt("p")}), coalesce(b.choices, p.choices), coalesce(b.gold, p.gold),
               coalesce(b.num_choices, p.num_choices),
               b.correct, b.response, b.prediction, p.correct, p.response, p.prediction,
               b.response_ref, p.response_ref
        FROM (SELECT * FROM results WHERE model_id = ? AND benchmark_id = ? AND sample_id = ?) b
        FULL OUTER JOIN (
            SELECT * FROM results WHERE model_id = ? AND benchmark_id = ? AND sample_id = coalesce(
                (SELECT post_sample_id FROM sample_links
                  WHERE pair_id = ? AND benchmark_id = ? AND base_sample_id = ?), ?)
        ) p
          ON b.seed = p.seed
        ORDER BY 1
        """,
        [
            pair["base_model_id"],
            benchmark_id,
            sample_id,
            pair["post_model_id"],
            benchmark_id,
            pair["id"],
            benchmark_id,
            sample_id,
            sample_id,
        ],
    ).fetchall()
    keys = ("seed", "prompt", "choices", "gold", "num_choices", "base_correct", "base_response",
            "base_prediction", "post_correct", "post_response", "post_prediction")  # fmt: skip
    texts = read_texts(conn, [ref for r in rows for ref in r[-2:]])
    records = []
    for *values, base_ref, post_ref in rows:
        record = dict(zip(keys, values, strict=True))
        if base_ref is not None:
            record["base_response"] = texts[base_ref]
        if post_ref is not None:
            record["post_response"] = texts[post_ref]
        records.append(record)
    return records


def pair_sample_rows(conn: Connection, pair: dict) -> pa.Table:
    """Every paired per-sample row of a pair (for export): both models side by side, long answers
    read from their files (app/db/texts.py)."""
    files = answer_files(conn)
    if files:
        texts = "LEFT JOIN read_parquet($files) {0} ON {0}.ref = {1}.response_ref"
        joins = texts.format("bt", "b") + " " + texts.format("pt", "p")
        base_response, post_response = (
            "coalesce(b.response, bt.text)",
            "coalesce(p.response, pt.text)",
        )
    else:
        joins, base_response, post_response = "", "b.response", "p.response"
    params = {"post": pair["post_model_id"], "base": pair["base_model_id"]}
    if files:
        params["files"] = files
    return conn.sql(
        f"""
        SELECT bm.name AS benchmark, bm.category, b.seed, b.sample_id,
               b.correct::INT AS base_correct, p.correct::INT AS post_correct,
               coalesce(b.num_choices, p.num_choices) AS num_choices,
               {full_prompt("b")} AS prompt, b.gold, b.prediction AS base_prediction,
               p.prediction AS post_prediction, {base_response} AS base_response,
               {post_response} AS post_response
        FROM results b
        JOIN results p ON p.model_id = $post AND p.benchmark_id = b.benchmark_id
                      AND p.seed = b.seed AND p.sample_id = b.sample_id
        JOIN benchmarks bm ON bm.id = b.benchmark_id
        {joins}
        WHERE b.model_id = $base
        ORDER BY bm.name, b.seed, b.sample_id
        """,
        params=params,
    ).to_arrow_table()


def most_forgotten(conn: Connection, *, limit: int = 50) -> list[dict]:
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
        """,
        [limit],
    ).fetchall()
    keys = ("benchmark", "category", "sample_id", "pairs", "pair_ids", "prompt")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def models(conn: Connection) -> list[dict]:
    rows = conn.execute(
        "SELECT id, name, family, size_params, fingerprint FROM models ORDER BY name"
    ).fetchall()
    return [
        dict(zip(("id", "name", "family", "size_params", "fingerprint"), r, strict=True))
        for r in rows
    ]


def benchmarks(conn: Connection) -> list[dict]:
    rows = conn.execute(
        "SELECT name, category, num_choices FROM benchmarks ORDER BY name"
    ).fetchall()
    return [{"name": n, "category": c, "num_choices": k} for n, c, k in rows]


def pair_benchmarks(conn: Connection, pair_id: int) -> list[tuple[str, str]]:
    """(name, category) of the benchmarks a pair has paired samples on."""
    return conn.execute(
        "SELECT DISTINCT b.name, b.category FROM transitions t JOIN benchmarks b ON b.id = t.benchmark_id "
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


def jobs_summary(conn: Connection) -> list[dict]:
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
    return [{"id": r[0], "status": r[1], "created_at": r[2].isoformat(), "kind": r[3], "shards": r[4],
             "finished": r[5], "failed": r[6], "owner": r[7], "resends": int(r[8]),
             "payload": json.loads(r[9]), "series": r[10], "step": r[11]} for r in rows]  # fmt: skip


def job_series(conn: Connection, job_id: int) -> tuple[int, str, int] | None:
    """(series id, name, step) when the job evaluates a checkpoint of a series, else None."""
    row = conn.execute(
        "SELECT se.id, se.name, ws.step FROM watch_submissions ws "
        "JOIN series se ON se.id = ws.series_id "
        "WHERE ws.job_id = ? ORDER BY ws.step LIMIT 1",
        [job_id],
    ).fetchone()
    return (int(row[0]), row[1], int(row[2])) if row else None


def model_specs(conn: Connection, names: list[str]) -> dict[str, dict]:
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
    conn: Connection, pair_ids: list[int] | None = None, *, exclude_truncated: bool = False
) -> Columns:
    """The category map's input: every (pair, benchmark, seed, k-group) row of transition counts
    of the given pairs (None: all), ids only, ordered by (pair, benchmark id, seed, k)."""
    where = "" if pair_ids is None else "WHERE t.pair_id IN (SELECT unnest($ids))"
    sql = f"""
        SELECT t.pair_id, t.benchmark_id, t.seed, t.num_choices AS k, {_cells(exclude_truncated)}
        FROM transitions t {where}
    """
    params = None if pair_ids is None else {"ids": list(pair_ids)}
    columns = numpy_columns(conn.sql(sql, params=params))
    return _in_order(columns, ("pair_id", "benchmark_id", "seed", "k"))


def pair_fingerprints(conn: Connection, *, with_coverage: bool = False) -> dict[int, int]:
    """Per pair, a hash of everything its map records depend on: its transition and cross-seed
    cell counts, the seed-vs-seed counts of both its models (the noise floor), its names, label
    and stage, the benchmarks' names, categories and full sizes, and (benchmark level) its
    coverage counts. A pair whose hash
    is unchanged has unchanged records."""
    rows = conn.execute(
        f"""
        WITH t AS (
            SELECT pair_id, count(*) AS n,
                   bit_xor(hash(benchmark_id, seed, num_choices, n_00, n_01, n_10, n_11,
                                t_00, t_01, t_10, t_11)) AS h
            FROM transitions GROUP BY pair_id
        ), s AS (
            SELECT model_id, count(*) AS n,
                   bit_xor(hash(benchmark_id, seed_a, seed_b, num_choices, n_00, n_01, n_10, n_11)) AS h
            FROM seed_transitions GROUP BY model_id
        ), x AS (
            SELECT pair_id, count(*) AS n,
                   bit_xor(hash(benchmark_id, seed_a, seed_b, num_choices, {JOINT_COLUMNS})) AS h
            FROM cross_seed_cells GROUP BY pair_id
        ), b AS (
            SELECT count(*) AS n, coalesce(bit_xor(hash(id, name, category, full_size)), 0) AS h
            FROM benchmarks
        ), c AS (
            SELECT pair_id, bit_xor(hash(benchmark_id, seed, only_base, only_post, mismatched)) AS h
            FROM coverage WHERE $with_coverage GROUP BY pair_id
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
        """,
        {"with_coverage": with_coverage},
    ).fetchall()
    return dict(rows)
