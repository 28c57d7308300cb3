"""Probes: asking a pair's post model again, flip by flip (issue 53, forgetmap.analysis.probe).

One ``probes`` row per probe shard: its pair, the options it ran with and the report the app
computed from its outcomes; one ``probe_outcomes`` row per probed item: the arm (the flips or one
of the controls), the row of the store it probed, its option count, the gold option and the one
the model ranked first (NULL: a tie at the top).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE probes_id_seq START 1")
    op.execute(
        """
        CREATE TABLE probes (
            id INTEGER DEFAULT nextval('probes_id_seq') PRIMARY KEY,
            pair_id INTEGER NOT NULL,
            shard_id INTEGER NOT NULL UNIQUE,
            config VARCHAR NOT NULL,
            summary VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE probe_outcomes (
            probe_id INTEGER NOT NULL,
            arm VARCHAR NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            sample_id VARCHAR NOT NULL,
            num_choices SMALLINT NOT NULL,
            gold SMALLINT NOT NULL,
            chosen SMALLINT,
            PRIMARY KEY (probe_id, arm, benchmark_id, seed, sample_id)
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE probe_outcomes")
    op.execute("DROP TABLE probes")
    op.execute("DROP SEQUENCE probes_id_seq")
