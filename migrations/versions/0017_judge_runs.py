"""Judge runs: a judge model's reading of a pair's unread answers (issue 53,
forgetmap.services.judge).

The readings themselves are a score set (0014's ``score_sets`` and ``rescored``, named
``judge:<model>`` by default), so a map can be drawn with them; ``judge_runs`` keeps what each set
was made from: the pair, the shard, the judge's model and prompt (``config``) and its audit
(``audit``: on rows the harness read an option from, how often the judge named the same one).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE judge_runs_id_seq START 1")
    op.execute(
        """
        CREATE TABLE judge_runs (
            id INTEGER DEFAULT nextval('judge_runs_id_seq') PRIMARY KEY,
            pair_id INTEGER NOT NULL,
            shard_id INTEGER NOT NULL UNIQUE,
            score_set_id INTEGER NOT NULL,
            config VARCHAR NOT NULL,
            audit VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT now()
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE judge_runs")
    op.execute("DROP SEQUENCE judge_runs_id_seq")
