"""A score set's counts: the transition, cross-seed and seed-vs-seed counts of the pairs as a score
set (``forgetmap rescore``, ``forgetmap.db.scores``) grades their answers, for a map that asks for
them (``forgetmap map --scores NAME``).

The harness's counts are kept current by every import (``forgetmap.db.pairing``); a score set's are
counted when a map asks, from the per-sample rows, with the same SQL as the harness's
(``pairing.transition_sql``, ``cross_seed_sql``, ``seed_transition_sql``) over ``results`` as the
set grades them (``pairing.scored_results``: its grade where it graded a row, the harness's
elsewhere). They go into temporary tables of the caller's connection, ``scored_transitions``,
``scored_cross_seed_cells`` and ``scored_seed_transitions``, shaped as the stored ones, so the map's
reads (``forgetmap.db.queries``, ``source=SCORED``) take them unchanged; the map keeps its records
until the next write.
"""

from __future__ import annotations

from forgetmap.db.pairing import (
    cross_seed_sql,
    joined_sql,
    scored_results,
    seed_transition_sql,
    transition_sql,
)
from forgetmap.db.store import Connection

SCORED = "scored_"
"""The prefix of the temporary count tables (``forgetmap.db.queries``' ``source``)."""


def build(conn: Connection, score_set_id: int, pair_ids: list[int] | None = None) -> None:
    """Count the pairs (``pair_ids``; None: all) as score set ``score_set_id`` grades them, into
    this connection's temporary tables ``scored_*`` (replacing what they held)."""
    results = scored_results(score_set_id)
    conn.execute(
        """
        CREATE OR REPLACE TEMP TABLE scored_units AS
        SELECT c.pair_id, p.base_model_id, p.post_model_id, c.benchmark_id, c.seed
        FROM coverage c JOIN pairs p ON p.id = c.pair_id
        WHERE $all OR list_contains($ids::INTEGER[], c.pair_id)
        """,
        {"all": pair_ids is None, "ids": list(pair_ids or [])},
    )
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE scored_joined AS {joined_sql('scored_units', results)}"
    )
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE scored_transitions AS {transition_sql('scored_joined')}"
    )
    lo, hi = conn.execute("SELECT min(seed), max(seed) FROM scored_units").fetchall()[0]
    conn.execute(
        "CREATE OR REPLACE TEMP TABLE scored_cross_seed_cells AS "
        f"{cross_seed_sql(['scored_joined'])}",
        [hi if hi is not None else 0, lo if lo is not None else 0],
    )
    conn.execute(
        """
        CREATE OR REPLACE TEMP TABLE scored_models AS
        SELECT base_model_id AS model_id, benchmark_id FROM scored_units
        UNION SELECT post_model_id, benchmark_id FROM scored_units
        """
    )
    lo, hi = conn.execute(
        "SELECT min(r.seed), max(r.seed) FROM results r "
        "SEMI JOIN scored_models m ON r.model_id = m.model_id AND r.benchmark_id = m.benchmark_id"
    ).fetchall()[0]
    conn.execute(
        f"CREATE OR REPLACE TEMP TABLE scored_seed_transitions AS "
        f"{seed_transition_sql('scored_models', results)}",
        [hi if hi is not None else 0, lo if lo is not None else 0],
    )
    for table in ("scored_joined", "scored_units", "scored_models"):
        conn.execute(f"DROP TABLE {table}")
