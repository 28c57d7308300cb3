"""The drill-down's reads: the samples of a pair with a transition (and the causes of their
answers), one sample's answers per seed, and every paired row for export. Values go in as
parameters; table and column names are fixed strings."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from forgetmap.core.answer_status import CAUSE_BITS, TRUNCATED
from forgetmap.core.sample_marks import AMBIGUOUS_MARK
from forgetmap.db.pairing import cause_bits
from forgetmap.db.prompts import full_prompt
from forgetmap.db.queries import TRANSITIONS
from forgetmap.db.store import Connection, one_row
from forgetmap.db.texts import answer_files, read_texts, response_texts


def _like(q: str) -> str:
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


SAMPLE_CAUSES = f"({cause_bits('b.answer_status')} | {cause_bits('p.answer_status')})"
"""SQL: a paired sample's causes under one seed (``b``: the base's row, ``p``: the post's)."""


def _paired(pair: dict[str, Any]) -> tuple[str, list[Any]]:
    """FROM/WHERE of a pair's paired rows, ``b`` the base's and ``p`` the post's of one seed,
    ``bm`` their benchmark. A post sample linked by question text (sample_links) stands in for
    the base's id; samples whose key is ambiguous never pair (forgetmap.core.sample_identity)."""
    sql = f"""
        FROM results b
        LEFT JOIN sample_links l ON l.pair_id = ? AND l.benchmark_id = b.benchmark_id
                                AND l.base_sample_id = b.sample_id
        JOIN results p ON p.model_id = ? AND p.benchmark_id = b.benchmark_id
                      AND p.seed = b.seed AND p.sample_id = coalesce(l.post_sample_id, b.sample_id)
        JOIN benchmarks bm ON bm.id = b.benchmark_id
        WHERE b.model_id = ?
          AND (b.doc_hash IS NULL OR p.doc_hash IS NULL OR b.doc_hash = p.doc_hash)
          AND b.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%'
    """
    return sql, [pair["id"], pair["post_model_id"], pair["base_model_id"]]


VERSUS_SHOWN = 500
"""Questions listed on each side of a two-pair comparison (the counts are of all of them)."""


def versus(conn: Connection, first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two pairs question by question (on the questions both paired): per benchmark, how many
    each forgot while the other kept, and how many both forgot; and those questions, at most
    ``VERSUS_SHOWN`` a side. A pair forgot a question when it went 1->0 in a strict majority of
    the seeds it paired, kept it when 1->1 in a strict majority."""
    sides = []
    params: list[Any] = []
    for number, pair in ((1, first), (2, second)):
        where, values = _paired(pair)
        sides.append(
            f"SELECT {number} AS side, bm.name AS benchmark, bm.category, b.sample_id, "
            f"b.correct AS pre, p.correct AS post, "
            f"coalesce(b.question, {full_prompt('b')}) AS question {where}"
        )
        params += values
    rows = conn.execute(
        f"""
        WITH paired AS ({" UNION ALL ".join(sides)}),
        fates AS (
            SELECT side, benchmark, category, sample_id, any_value(question) AS question,
                   2 * count(*) FILTER (WHERE pre AND NOT post) > count(*) AS forgot,
                   2 * count(*) FILTER (WHERE pre AND post) > count(*) AS kept
            FROM paired GROUP BY ALL
        )
        SELECT a.benchmark, a.category, a.sample_id, coalesce(a.question, c.question),
               CASE WHEN a.forgot AND c.forgot THEN 'both'
                    WHEN a.forgot AND c.kept THEN 'first' ELSE 'second' END AS fate
        FROM fates a JOIN fates c ON a.side = 1 AND c.side = 2 AND c.benchmark = a.benchmark
                                 AND c.sample_id = a.sample_id
        WHERE (a.forgot AND (c.kept OR c.forgot)) OR (c.forgot AND a.kept)
        ORDER BY a.benchmark, a.sample_id
        """,
        params,
    ).fetchall()
    counts: dict[str, dict[str, Any]] = {}
    questions: dict[str, list[dict[str, Any]]] = {"first": [], "second": [], "both": []}
    for benchmark, category, sample_id, question, fate in rows:
        count = counts.setdefault(
            benchmark,
            {"benchmark": benchmark, "category": category, "first": 0, "second": 0, "both": 0},
        )
        count[fate] += 1
        if len(questions[fate]) < VERSUS_SHOWN:
            questions[fate].append(
                {"benchmark": benchmark, "sample_id": sample_id, "question": question}
            )
    return {"benchmarks": list(counts.values()), "questions": questions}


def _flip_filter(
    conn: Connection,
    pair: dict[str, Any],
    benchmarks: list[int] | None,
    transition: str,
    q: str | None,
    exclude: int = 0,
    cause: int = 0,
) -> tuple[str, list[Any]]:
    """FROM/WHERE shared by the listing and its count; values go in as parameters. ``exclude``:
    the bits of the causes whose seeds are left out; ``cause``: only the seeds with one of these."""
    pre, post = TRANSITIONS[transition]
    sql, params = _paired(pair)
    sql += " AND b.correct = ? AND p.correct = ?"
    params += [pre, post]
    if exclude:
        sql += f" AND ({SAMPLE_CAUSES} & ?) = 0"
        params.append(exclude)
    if cause:
        sql += f" AND ({SAMPLE_CAUSES} & ?) <> 0"
        params.append(cause)
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
    pair: dict[str, Any],
    *,
    benchmarks: list[int] | None,
    transition: str,
    q: str | None,
    page: int,
    page_size: int,
    exclude: int = 0,
    cause: int = 0,
) -> tuple[int, list[dict[str, Any]]]:
    """Samples of a pair with the given transition in at least one seed, most seeds first.

    Returns (total number of samples, rows of this page). A row is one (benchmark, sample); its
    prompt, gold and both predictions are those of one seed, ``letters_seed`` (the first with the
    transition), never of two;
    ``causes``: the bits of the statuses other than answered of either side's answer in the seeds
    with the transition (``truncated``: its truncated bit). ``exclude`` leaves out the seeds with
    one of those causes, ``cause`` keeps only them.
    """
    where, params = _flip_filter(conn, pair, benchmarks, transition, q, exclude, cause)
    total = one_row(
        conn.execute(
            f"SELECT count(*) FROM (SELECT DISTINCT b.benchmark_id, b.sample_id {where})", params
        ).fetchone()
    )[0]
    rows = conn.execute(
        f"""
        SELECT bm.name, bm.category, b.sample_id, list(b.seed ORDER BY b.seed) AS seeds,
               arg_min({full_prompt("b")}, b.seed) AS prompt, arg_min(b.gold, b.seed) AS gold,
               arg_min(b.prediction, b.seed) AS base_prediction,
               arg_min(p.prediction, b.seed) AS post_prediction, min(b.seed) AS letters_seed,
               coalesce(any_value(b.question), any_value(p.question)) AS question,
               bit_or({SAMPLE_CAUSES}) AS causes
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
        "letters_seed",
        "question",
        "causes",
    )
    found = [dict(zip(keys, r, strict=True)) for r in rows]
    for row in found:
        row["causes"] = causes_named(row["causes"])
        row["truncated"] = TRUNCATED in row["causes"]
    return int(total), found


def causes_named(bits: int | None) -> list[str]:
    """The causes whose bits are set, in ``CAUSE_BITS`` order."""
    return [name for name, bit in CAUSE_BITS.items() if (bits or 0) & bit]


def sample_detail(
    conn: Connection, pair: dict[str, Any], benchmark_id: int, sample_id: str
) -> list[dict[str, Any]]:
    """Both models' rows of one sample, per seed (a seed present on one side only shows one):
    ``prompt`` the base model's (the post's where the base has none), ``post_prompt`` the post
    model's (a chat model's differs: its template, no few-shot block)."""
    rows = conn.execute(
        f"""
        SELECT coalesce(b.seed, p.seed) AS seed,
               coalesce({full_prompt("b")}, {full_prompt("p")}), {full_prompt("p")},
               coalesce(b.choices, p.choices), coalesce(b.gold, p.gold),
               coalesce(b.num_choices, p.num_choices),
               b.correct, b.response, b.prediction, p.correct, p.response, p.prediction,
               b.answer_status, p.answer_status, b.response_ref, p.response_ref
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
    keys = (
        "seed",
        "prompt",
        "post_prompt",
        "choices",
        "gold",
        "num_choices",
        "base_correct",
        "base_response",
        "base_prediction",
        "post_correct",
        "post_response",
        "post_prediction",
        "base_status",
        "post_status",
    )
    texts = read_texts(conn, [ref for r in rows for ref in r[-2:]])
    records = []
    for *values, base_ref, post_ref in rows:
        record = dict(zip(keys, values, strict=True))
        if base_ref is not None:
            record["base_response"] = texts[base_ref]
        if post_ref is not None:
            record["post_response"] = texts[post_ref]
        record["rescored"] = []
        records.append(record)
    by_seed = {r["seed"]: r for r in records}
    for name, side, seed, prediction, correct, status, rule in _rescored(
        conn, pair, benchmark_id, sample_id
    ):
        if seed in by_seed:
            by_seed[seed]["rescored"].append(
                {
                    "scores": name,
                    "side": side,
                    "prediction": prediction,
                    "correct": correct,
                    "status": status,
                    "rule": rule,
                }
            )
    return records


def _rescored(
    conn: Connection, pair: dict[str, Any], benchmark_id: int, sample_id: str
) -> list[tuple[Any, ...]]:
    """Each score set's grade of one sample's base and post answers (``forgetmap rescore``):
    (set, side, seed, prediction, correct, status, rule), by set, side and seed."""
    return conn.execute(
        """
        SELECT ss.name, CASE WHEN s.model_id = $base THEN 'base' ELSE 'post' END AS side, s.seed,
               s.prediction, s.correct, s.answer_status, s.rule
        FROM rescored s JOIN score_sets ss ON ss.id = s.score_set_id
        WHERE s.benchmark_id = $benchmark AND (
            (s.model_id = $base AND s.sample_id = $sample)
            OR (s.model_id = $post AND s.sample_id = coalesce(
                (SELECT post_sample_id FROM sample_links
                  WHERE pair_id = $pair AND benchmark_id = $benchmark AND base_sample_id = $sample),
                $sample)))
        ORDER BY ss.name, side, s.seed
        """,
        {
            "base": pair["base_model_id"],
            "post": pair["post_model_id"],
            "pair": pair["id"],
            "benchmark": benchmark_id,
            "sample": sample_id,
        },
    ).fetchall()


def pair_sample_rows(conn: Connection, pair: dict[str, Any]) -> pa.Table:
    """Every paired per-sample row of a pair (for export): both models side by side, long answers
    read from their files (app/db/texts.py)."""
    files = answer_files(conn)
    joins, (base_response, post_response) = response_texts(files, "b", "p")
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
               {post_response} AS post_response, b.answer_status AS base_status,
               p.answer_status AS post_status
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
