"""Checkpoint series: a base model and its checkpoints in training order, and the folder watcher's
record of what it submitted.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE series_id_seq START 1")
    op.execute(
        """
        CREATE TABLE series (
            id INTEGER PRIMARY KEY DEFAULT nextval('series_id_seq'),
            name VARCHAR NOT NULL UNIQUE,
            base_model_id INTEGER NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT now()
        )
        """
    )
    # one row per checkpoint: its training step and the (base, checkpoint) pair that scores it
    op.execute(
        """
        CREATE TABLE series_checkpoints (
            series_id INTEGER NOT NULL,
            step BIGINT NOT NULL,
            model_id INTEGER NOT NULL,
            pair_id INTEGER NOT NULL,
            PRIMARY KEY (series_id, step),
            UNIQUE (series_id, model_id)
        )
        """
    )
    # the watcher's memory across restarts: a folder is submitted once per series
    op.execute(
        """
        CREATE TABLE watch_submissions (
            series_id INTEGER NOT NULL,
            path VARCHAR NOT NULL,
            step BIGINT NOT NULL,
            model_id INTEGER NOT NULL,
            job_id INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            submitted_at TIMESTAMP NOT NULL DEFAULT now(),
            PRIMARY KEY (series_id, path)
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE watch_submissions")
    op.execute("DROP TABLE series_checkpoints")
    op.execute("DROP TABLE series")
    op.execute("DROP SEQUENCE series_id_seq")
