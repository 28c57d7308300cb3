"""The atlas's reads: per question, how many of the chosen pairs forgot or learned it, the chance
counts those pairs' benchmarks imply, and one question across every pair.

``question_flips`` (migration 0011, kept by ``forgetmap.db.pairing.refresh_counts``) holds each
paired sample whose answer changed; a pair forgets a question when it went 1->0 in at least half of
the seeds the pair has paired on that benchmark (the same rule as the series' "known"), and learns
it when it went 0->1 in at least half.
"""

from __future__ import annotations

from typing import Any, cast

from forgetmap.db.prompts import full_prompt
from forgetmap.db.queries import Columns, numpy_columns
from forgetmap.db.store import Connection
from forgetmap.db.texts import read_texts

_FLIPS_SQL = """
WITH chosen AS (
    SELECT unnest($pairs::INTEGER[]) AS pair_id
), benchmark AS (
    SELECT id AS benchmark_id, name, category FROM benchmarks
    WHERE ($category IS NULL OR category = $category) AND ($benchmark IS NULL OR name = $benchmark)
), seeds AS (
    SELECT c.pair_id, c.benchmark_id, count(*) AS seeds
    FROM coverage c JOIN chosen USING (pair_id) JOIN benchmark USING (benchmark_id)
    WHERE c.paired > 0 GROUP BY ALL
), per_pair AS (
    SELECT f.pair_id, f.benchmark_id, f.question_id, max(f.num_choices) AS k,
           count(*) FILTER (WHERE f.forgot) AS forgot_seeds,
           count(*) FILTER (WHERE NOT f.forgot) AS learned_seeds
    FROM question_flips f JOIN chosen USING (pair_id) SEMI JOIN benchmark USING (benchmark_id)
    GROUP BY ALL
), reliable_at AS (
    SELECT unnest($reliable_pairs::INTEGER[]) AS pair_id,
           unnest($reliable_benchmarks::INTEGER[]) AS benchmark_id,
           unnest($reliable_seeds::INTEGER[]) AS min_seeds
), per_question AS (
    SELECT p.question_id, any_value(p.benchmark_id) AS benchmark_id, max(p.k) AS k,
           count(*) FILTER (WHERE 2 * p.forgot_seeds >= s.seeds) AS forgot,
           count(*) FILTER (WHERE 2 * p.learned_seeds >= s.seeds) AS learned,
           count(*) FILTER (WHERE p.forgot_seeds >= r.min_seeds) AS forgot_reliable,
           count(*) FILTER (WHERE p.learned_seeds >= r.min_seeds) AS learned_reliable
    FROM per_pair p JOIN seeds s USING (pair_id, benchmark_id)
    LEFT JOIN reliable_at r USING (pair_id, benchmark_id)
    GROUP BY p.question_id
    HAVING forgot > 0 OR learned > 0
), held AS (
    SELECT benchmark_id, count(*) AS held FROM seeds GROUP BY benchmark_id
)
SELECT q.question_id, q.benchmark_id, b.name AS benchmark, b.category, fq.sample_id, q.k,
       q.forgot, q.learned, h.held, q.forgot_reliable, q.learned_reliable
FROM per_question q JOIN benchmark b USING (benchmark_id)
JOIN held h USING (benchmark_id)
JOIN flipped_questions fq ON fq.id = q.question_id
"""


def question_flip_counts(
    conn: Connection,
    pair_ids: list[int],
    *,
    category: str | None,
    benchmark: str | None,
    reliable_at: dict[tuple[int, int], int] | None = None,
) -> Columns:
    """Per question with a flip among ``pair_ids``: question_id, benchmark_id, benchmark,
    category, sample_id, k (0: generative), forgot and learned (how many of the pairs), held
    (how many of the pairs paired samples of its benchmark: the count forgot is out of), and
    forgot_reliable and learned_reliable: how many of the pairs flipped it in at least
    ``reliable_at[(pair, benchmark)]`` seeds (a reliable change there, see
    ``forgetmap.core.consensus.reliable_threshold``; a pair and benchmark not in it: never)."""
    keys = list(reliable_at or {})
    params = {
        "pairs": pair_ids,
        "category": category,
        "benchmark": benchmark,
        "reliable_pairs": [p for p, _ in keys],
        "reliable_benchmarks": [b for _, b in keys],
        "reliable_seeds": [int((reliable_at or {})[k]) for k in keys],
    }
    return numpy_columns(conn.execute(_FLIPS_SQL, params))


def paired_seeds(conn: Connection, pair_ids: list[int]) -> Columns:
    """Per (pair, benchmark) of ``pair_ids``: its base and post model ids and how many seeds it
    paired samples on (what the atlas's reliable changes are judged against)."""
    return numpy_columns(
        conn.execute(
            """
            SELECT c.pair_id, c.benchmark_id, any_value(p.base_model_id) AS base_model_id,
                   any_value(p.post_model_id) AS post_model_id, count(*) AS seeds
            FROM coverage c JOIN pairs p ON p.id = c.pair_id
            WHERE c.paired > 0 AND list_contains($pairs::INTEGER[], c.pair_id)
            GROUP BY c.pair_id, c.benchmark_id
            """,
            {"pairs": pair_ids},
        )
    )


def benchmark_transitions(conn: Connection, pair_ids: list[int]) -> Columns:
    """The transition counts of ``pair_ids`` per (pair, benchmark, seed, k): what the chance
    term of each pair's benchmarks is computed from."""
    return numpy_columns(
        conn.execute(
            """
            SELECT t.pair_id, t.benchmark_id, t.seed, t.num_choices AS k,
                   sum(t.n_00)::BIGINT AS n_00, sum(t.n_01)::BIGINT AS n_01,
                   sum(t.n_10)::BIGINT AS n_10, sum(t.n_11)::BIGINT AS n_11
            FROM transitions t WHERE list_contains($pairs::INTEGER[], t.pair_id)
            GROUP BY t.pair_id, t.benchmark_id, t.seed, t.num_choices
            """,
            {"pairs": pair_ids},
        )
    )


def question_texts(conn: Connection, question_ids: list[int]) -> dict[int, str | None]:
    """The text of each flipped question, by its id (``flipped_questions``)."""
    rows = conn.execute(
        "SELECT id, question FROM flipped_questions WHERE list_contains($ids::INTEGER[], id)",
        {"ids": question_ids},
    ).fetchall()
    return dict(rows)


def question_text(conn: Connection, benchmark: int, sample_id: str) -> str | None:
    """One question's text: kept with it once some pair flipped it, else read from its rows."""
    rows = conn.execute(
        "SELECT question FROM flipped_questions WHERE benchmark_id = ? AND sample_id = ?",
        [benchmark, sample_id],
    ).fetchall()
    if rows:
        return cast(str | None, rows[0][0])  # a question, or NULL where its rows had none
    rows = conn.execute(
        f"SELECT any_value(coalesce(r.question, {full_prompt('r')})), count(*) FROM results r "
        "WHERE r.benchmark_id = ? AND r.sample_id = ?",
        [benchmark, sample_id],
    ).fetchall()
    return rows[0][0] if rows[0][1] else None


def question_across_pairs(conn: Connection, benchmark: int, sample_id: str) -> list[dict[str, Any]]:
    """One question's answers in every pair that holds it on both sides, per seed: the pair, the
    seed, and each side's correctness, extracted answer and answer text (the post side found
    through the pair's links by question text where it has another id)."""
    rows = conn.execute(
        """
        WITH post_ids AS (
            SELECT pr.id AS pair_id, coalesce(l.post_sample_id, $sample) AS post_sample
            FROM pairs pr
            LEFT JOIN sample_links l ON l.pair_id = pr.id AND l.benchmark_id = $benchmark
                                    AND l.base_sample_id = $sample
        )
        SELECT pr.id, b.seed, b.correct, b.prediction, b.response, p.correct, p.prediction,
               p.response, b.gold, b.response_ref, p.response_ref
        FROM pairs pr JOIN post_ids i ON i.pair_id = pr.id
        JOIN results b ON b.model_id = pr.base_model_id AND b.benchmark_id = $benchmark
                      AND b.sample_id = $sample
        JOIN results p ON p.model_id = pr.post_model_id AND p.benchmark_id = $benchmark
                      AND p.sample_id = i.post_sample AND p.seed = b.seed
        ORDER BY pr.id, b.seed
        """,
        {"benchmark": benchmark, "sample": sample_id},
    ).fetchall()
    keys = (
        "pair_id",
        "seed",
        "base_correct",
        "base_prediction",
        "base_response",
        "post_correct",
        "post_prediction",
        "post_response",
        "gold",
    )
    texts = read_texts(conn, [ref for r in rows for ref in r[-2:]])
    out = []
    for *values, base_ref, post_ref in rows:
        record = dict(zip(keys, values, strict=True))
        if base_ref is not None:  # a long answer lives in its answer file (app/db/texts.py)
            record["base_response"] = texts[base_ref]
        if post_ref is not None:
            record["post_response"] = texts[post_ref]
        out.append(record)
    return out


def question_probe_counts(conn: Connection, pair_ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """Per question: how many of ``pair_ids`` asked it again in their newest probe (``probed``),
    how many of those recovered it (its gold option won after the post model's own answer in at
    least half of the seeds asked, the atlas's rule for forgetting), and how many "recovered" it
    in the shuffled control by the same rule (after another flip's answer)."""
    rows = conn.execute(
        """
        WITH newest AS (
            SELECT pair_id, max(id) AS probe_id FROM probes
            WHERE list_contains($pairs::INTEGER[], pair_id) GROUP BY pair_id
        ), per_pair AS (
            SELECT n.pair_id, fq.id AS question_id,
                   count(*) FILTER (WHERE o.arm = 'flips') AS asked,
                   count(*) FILTER (WHERE o.arm = 'flips' AND o.chosen = o.gold) AS recovered,
                   count(*) FILTER (WHERE o.arm = 'shuffled' AND o.chosen = o.gold) AS control
            FROM newest n
            JOIN probe_outcomes o ON o.probe_id = n.probe_id
            JOIN flipped_questions fq ON fq.benchmark_id = o.benchmark_id
                                     AND fq.sample_id = o.sample_id
            WHERE o.arm IN ('flips', 'shuffled')
            GROUP BY ALL
        )
        SELECT question_id,
               count(*) FILTER (WHERE asked > 0),
               count(*) FILTER (WHERE asked > 0 AND 2 * recovered >= asked),
               count(*) FILTER (WHERE asked > 0 AND 2 * control >= asked)
        FROM per_pair GROUP BY question_id
        """,
        {"pairs": pair_ids},
    ).fetchall()
    return {int(q): (int(p), int(r), int(c)) for q, p, r, c in rows}
