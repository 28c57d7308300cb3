"""The SQL behind a series' export to a tracker (app/services/series_export.py): exact flip counts
per (step, category) and the flipped samples row by row, paired as the map pairs them."""

from __future__ import annotations

from typing import Any

from forgetmap.core.sample_marks import AMBIGUOUS_MARK
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection
from forgetmap.db.texts import read_texts


def flip_counts(conn: Connection, series_id: int, steps: list[int] | None) -> list[dict[str, Any]]:
    """Per (step, category): 1->0 flips, 0->1 flips and (question, seed) pairs compared, summed
    over the category's benchmarks and seeds from the materialized counts the map reads."""
    rows = conn.execute(
        """
        SELECT c.step, b.category, sum(t.n_10), sum(t.n_01), sum(t.n_00 + t.n_01 + t.n_10 + t.n_11)
        FROM series_checkpoints c
        JOIN transitions t ON t.pair_id = c.pair_id
        JOIN benchmarks b ON b.id = t.benchmark_id
        WHERE c.series_id = $series AND ($steps IS NULL OR list_contains($steps, c.step))
        GROUP BY c.step, b.category
        ORDER BY c.step, b.category
        """,
        {"series": series_id, "steps": steps},
    ).fetchall()
    keys = ("step", "category", "forgotten", "learned", "n")
    return [
        dict(zip(keys, (s, c, int(f), int(le), int(n)), strict=True)) for s, c, f, le, n in rows
    ]


def _clip(column: str, *, keep_end: bool = False) -> str:
    """SQL: ``column`` cut to $limit characters, "…" marking the cut (at the start when
    ``keep_end``: a prompt's question is at its end)."""
    kept = (
        f"'…' || right({column}, $limit - 1)" if keep_end else f"left({column}, $limit - 1) || '…'"
    )
    return f"CASE WHEN length({column}) > $limit THEN {kept} ELSE {column} END"


def flip_rows(
    conn: Connection,
    series: dict[str, Any],
    steps: list[int] | None,
    *,
    max_flips: int,
    text_limit: int,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Every 1->0 and 0->1 flip of the series' checkpoints against its base, per (step, benchmark,
    sample, seed), at most ``max_flips`` per step (forgotten first, then by category, benchmark,
    sample and seed); texts cut at ``text_limit`` characters. The pairing is the map's: a sample
    linked by question text stands in for the base's id, ambiguous keys and samples whose
    documents differ never pair. Returns (rows, the steps that had more flips than were kept)."""
    rows = conn.execute(
        f"""
        WITH ck AS (
            SELECT step, pair_id, model_id FROM series_checkpoints
            WHERE series_id = $series AND ($steps IS NULL OR list_contains($steps, step))
        ), flips AS (
            SELECT ck.step, b.benchmark_id, b.sample_id, b.seed, b.correct AS forgotten,
                   b.question, b.prompt, b.prompt_template_id, b.gold,
                   -- the extracted answer, else the response (a long one: in an answer file)
                   coalesce(nullif(b.prediction, ''), b.response) AS base_answer,
                   b.response_ref AS base_ref,
                   coalesce(nullif(p.prediction, ''), p.response) AS checkpoint_answer,
                   p.response_ref AS checkpoint_ref
            FROM ck
            JOIN results b ON b.model_id = $base
            LEFT JOIN sample_links l ON l.pair_id = ck.pair_id
                                    AND l.benchmark_id = b.benchmark_id
                                    AND l.base_sample_id = b.sample_id
            JOIN results p ON p.model_id = ck.model_id AND p.benchmark_id = b.benchmark_id
                          AND p.seed = b.seed
                          AND p.sample_id = coalesce(l.post_sample_id, b.sample_id)
            WHERE b.correct <> p.correct
              AND (b.doc_hash IS NULL OR p.doc_hash IS NULL OR b.doc_hash = p.doc_hash)
              AND b.sample_id NOT LIKE '%{AMBIGUOUS_MARK}%'
        ), ranked AS (
            SELECT f.*, bm.name AS benchmark, bm.category,
                   row_number() OVER (PARTITION BY f.step ORDER BY NOT f.forgotten, bm.category,
                                      bm.name, f.sample_id, f.seed) AS rank,
                   count(*) OVER (PARTITION BY f.step) AS in_step
            FROM flips f JOIN benchmarks bm ON bm.id = f.benchmark_id
        ), kept AS (
            SELECT * FROM ranked WHERE rank <= $max_flips
        )
        SELECT b.step, b.category, b.benchmark, b.sample_id, b.seed,
               CASE WHEN b.forgotten THEN 'forgotten' ELSE 'learned' END AS fate,
               {_clip(f"coalesce(b.question, {full_prompt('b')})", keep_end=True)} AS question,
               {_clip("b.gold")} AS gold,
               {_clip("b.base_answer")} AS base_answer, b.base_ref,
               {_clip("b.checkpoint_answer")} AS checkpoint_answer, b.checkpoint_ref,
               b.in_step > $max_flips AS cut
        FROM kept b
        ORDER BY b.step, b.rank
        """,
        {
            "series": series["id"],
            "base": series["base_model_id"],
            "steps": steps,
            "max_flips": max_flips,
            "limit": text_limit,
        },
    ).fetchall()
    keys = (
        "step",
        "category",
        "benchmark",
        "sample_id",
        "seed",
        "fate",
        "question",
        "gold",
        "base_answer",
        "base_ref",
        "checkpoint_answer",
        "checkpoint_ref",
        "cut",
    )
    records = [dict(zip(keys, r, strict=True)) for r in rows]
    # an answer with neither a prediction nor a short response lies in an answer file
    missing = [
        r[f"{side}_ref"]
        for r in records
        for side in ("base", "checkpoint")
        if r[f"{side}_answer"] is None and r[f"{side}_ref"] is not None
    ]
    texts = read_texts(conn, missing) if missing else {}
    cut_steps = sorted({r["step"] for r in records if r["cut"]})
    for r in records:
        for side in ("base", "checkpoint"):
            ref = r.pop(f"{side}_ref")
            if r[f"{side}_answer"] is None and ref is not None:
                text = texts[ref]
                r[f"{side}_answer"] = (
                    text if len(text) <= text_limit else text[: text_limit - 1] + "…"
                )
        del r["cut"]
    return records, cut_steps
