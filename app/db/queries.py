"""Reads behind the map and the pair lists. The map reads only the materialized count tables."""

from __future__ import annotations

import pyarrow as pa
from sqlalchemy import Connection


def _duck(conn: Connection):
    return conn.connection.driver_connection


def pair_transitions(conn: Connection) -> pa.Table:
    """Every (pair, benchmark, seed, k-group) row of transition counts with names attached."""
    return (
        _duck(conn)
        .sql(
            """
        SELECT t.pair_id, p.label, p.stage, mb.name AS base, mp.name AS post,
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
        ORDER BY t.pair_id, b.name, t.seed, t.num_choices
        """
        )
        .to_arrow_table()
    )


def seed_transitions_for_pairs(conn: Connection) -> pa.Table:
    """Seed-vs-seed counts of every model that is the base or post side of some pair."""
    return (
        _duck(conn)
        .sql(
            """
        SELECT s.model_id, s.benchmark_id, b.name AS benchmark, m.name AS model,
               s.seed_a, s.seed_b, s.num_choices AS k, s.n_00, s.n_01, s.n_10, s.n_11
        FROM seed_transitions s
        JOIN models m ON m.id = s.model_id
        JOIN benchmarks b ON b.id = s.benchmark_id
        WHERE s.model_id IN (SELECT base_model_id FROM pairs UNION SELECT post_model_id FROM pairs)
        ORDER BY s.model_id, s.benchmark_id, s.seed_a, s.seed_b, s.num_choices
        """
        )
        .to_arrow_table()
    )


def list_pairs(conn: Connection) -> list[dict]:
    rows = (
        _duck(conn)
        .execute(
            """
        SELECT p.id, mb.name, mp.name, p.label, p.stage, p.created_at,
               (SELECT count(DISTINCT benchmark_id) FROM transitions t WHERE t.pair_id = p.id),
               (SELECT count(DISTINCT seed) FROM transitions t WHERE t.pair_id = p.id),
               (SELECT coalesce(sum(paired), 0) FROM coverage c WHERE c.pair_id = p.id)
        FROM pairs p
        JOIN models mb ON mb.id = p.base_model_id
        JOIN models mp ON mp.id = p.post_model_id
        ORDER BY p.id
        """
        )
        .fetchall()
    )
    return [
        {
            "id": r[0],
            "base": r[1],
            "post": r[2],
            "label": r[3],
            "stage": r[4],
            "created_at": r[5].isoformat() if r[5] else None,
            "benchmarks": r[6],
            "seeds": r[7],
            "paired_samples": int(r[8]),
        }
        for r in rows
    ]


def table_contents(conn: Connection) -> dict[str, list[tuple]]:
    """Every row of every table, sorted: a content fingerprint for tests of 'nothing changed'."""
    duck = _duck(conn)
    names = [
        r[0]
        for r in duck.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
        ).fetchall()
    ]
    return {
        name: sorted(duck.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr) for name in names
    }
