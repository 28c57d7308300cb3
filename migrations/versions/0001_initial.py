"""Initial schema: metadata tables, per-sample results, materialized transition counts.

Written by hand: autogenerate does not work with duckdb-engine.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SEQUENCES = ("models_id_seq", "benchmarks_id_seq", "runs_id_seq", "pairs_id_seq", "jobs_id_seq")

TABLES = {
    "models": """
        id INTEGER PRIMARY KEY DEFAULT nextval('models_id_seq'),
        name VARCHAR NOT NULL UNIQUE,
        fingerprint VARCHAR,
        family VARCHAR,
        size_params BIGINT,
        created_at TIMESTAMP NOT NULL DEFAULT now()""",
    "benchmarks": """
        id INTEGER PRIMARY KEY DEFAULT nextval('benchmarks_id_seq'),
        name VARCHAR NOT NULL UNIQUE,
        category VARCHAR NOT NULL,
        num_choices SMALLINT""",
    "runs": """
        id INTEGER PRIMARY KEY DEFAULT nextval('runs_id_seq'),
        model_id INTEGER NOT NULL,
        benchmark_id INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        config_hash VARCHAR NOT NULL,
        config VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL DEFAULT now(),
        UNIQUE (model_id, benchmark_id, seed, config_hash)""",
    "pairs": """
        id INTEGER PRIMARY KEY DEFAULT nextval('pairs_id_seq'),
        base_model_id INTEGER NOT NULL,
        post_model_id INTEGER NOT NULL,
        label VARCHAR,
        stage VARCHAR,
        created_at TIMESTAMP NOT NULL DEFAULT now(),
        UNIQUE (base_model_id, post_model_id)""",
    "jobs": """
        id INTEGER PRIMARY KEY DEFAULT nextval('jobs_id_seq'),
        kind VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        payload VARCHAR NOT NULL,
        error VARCHAR,
        created_at TIMESTAMP NOT NULL DEFAULT now(),
        updated_at TIMESTAMP NOT NULL DEFAULT now()""",
    # no primary key on purpose: an index made bulk inserts 13x slower (the ingest keeps rows
    # unique)
    "results": """
        model_id INTEGER NOT NULL,
        benchmark_id INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        sample_id VARCHAR NOT NULL,
        run_id INTEGER NOT NULL,
        correct BOOLEAN NOT NULL,
        num_choices SMALLINT,
        prompt VARCHAR,
        response VARCHAR,
        prediction VARCHAR,
        gold VARCHAR,
        choices VARCHAR,
        doc_hash VARCHAR""",
    "transitions": """
        pair_id INTEGER NOT NULL,
        benchmark_id INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        num_choices SMALLINT NOT NULL,
        n_00 BIGINT NOT NULL,
        n_01 BIGINT NOT NULL,
        n_10 BIGINT NOT NULL,
        n_11 BIGINT NOT NULL,
        PRIMARY KEY (pair_id, benchmark_id, seed, num_choices)""",
    "coverage": """
        pair_id INTEGER NOT NULL,
        benchmark_id INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        paired BIGINT NOT NULL,
        only_base BIGINT NOT NULL,
        only_post BIGINT NOT NULL,
        mismatched BIGINT NOT NULL,
        PRIMARY KEY (pair_id, benchmark_id, seed)""",
    "seed_transitions": """
        model_id INTEGER NOT NULL,
        benchmark_id INTEGER NOT NULL,
        seed_a INTEGER NOT NULL,
        seed_b INTEGER NOT NULL,
        num_choices SMALLINT NOT NULL,
        n_00 BIGINT NOT NULL,
        n_01 BIGINT NOT NULL,
        n_10 BIGINT NOT NULL,
        n_11 BIGINT NOT NULL,
        PRIMARY KEY (model_id, benchmark_id, seed_a, seed_b, num_choices)""",
}


def upgrade() -> None:
    for seq in SEQUENCES:
        op.execute(f"CREATE SEQUENCE {seq} START 1")
    for name, columns in TABLES.items():
        op.execute(f"CREATE TABLE {name} ({columns}\n)")


def downgrade() -> None:
    for name in reversed(list(TABLES)):
        op.execute(f"DROP TABLE {name}")
    for seq in SEQUENCES:
        op.execute(f"DROP SEQUENCE {seq}")
