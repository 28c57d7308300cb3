"""Recoverability: the kind of a shard, stored recovery analyses and their per-document loss sums.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # 'evaluate' (model x benchmark x seed) or 'recover' (a pair on a text corpus)
    op.execute("ALTER TABLE shards ADD COLUMN kind VARCHAR DEFAULT 'evaluate'")
    op.execute("UPDATE shards SET kind = 'evaluate' WHERE kind IS NULL")
    op.execute("CREATE SEQUENCE recoveries_id_seq START 1")
    op.execute(
        """
        CREATE TABLE recoveries (
            id INTEGER PRIMARY KEY DEFAULT nextval('recoveries_id_seq'),
            pair_id INTEGER NOT NULL,
            shard_id INTEGER UNIQUE,
            corpus VARCHAR NOT NULL,
            config VARCHAR NOT NULL,
            summary VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT now()
        )
        """
    )
    # long format: one row per (document, model, correction); the wide export pivots it
    op.execute(
        """
        CREATE TABLE recovery_documents (
            recovery_id INTEGER NOT NULL,
            doc_index INTEGER NOT NULL,
            doc_id VARCHAR NOT NULL,
            split VARCHAR NOT NULL,
            n_tokens INTEGER NOT NULL,
            model VARCHAR NOT NULL,
            correction VARCHAR NOT NULL,
            loss_sum DOUBLE NOT NULL
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE recovery_documents")
    op.execute("DROP TABLE recoveries")
    op.execute("DROP SEQUENCE recoveries_id_seq")
    op.execute("ALTER TABLE shards DROP COLUMN kind")
