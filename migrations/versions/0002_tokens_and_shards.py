"""API tokens (stored hashed), evaluation shards of a job, token counts of each result.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE api_tokens_id_seq START 1")
    op.execute("CREATE SEQUENCE shards_id_seq START 1")
    op.execute(
        """
        CREATE TABLE api_tokens (
            id INTEGER PRIMARY KEY DEFAULT nextval('api_tokens_id_seq'),
            name VARCHAR NOT NULL UNIQUE,
            token_hash VARCHAR NOT NULL UNIQUE,
            created_at TIMESTAMP NOT NULL DEFAULT now(),
            last_used_at TIMESTAMP
        )
        """
    )
    op.execute(
        """
        CREATE TABLE shards (
            id INTEGER PRIMARY KEY DEFAULT nextval('shards_id_seq'),
            job_id INTEGER NOT NULL,
            model_id INTEGER NOT NULL,
            benchmark VARCHAR NOT NULL,
            seed INTEGER NOT NULL,
            config_hash VARCHAR NOT NULL,
            spec VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            done INTEGER NOT NULL DEFAULT 0,
            total INTEGER,
            error VARCHAR,
            attempts INTEGER NOT NULL DEFAULT 0,
            worker VARCHAR,
            created_at TIMESTAMP NOT NULL DEFAULT now(),
            started_at TIMESTAMP,
            heartbeat_at TIMESTAMP,
            sent_at TIMESTAMP,
            finished_at TIMESTAMP
        )
        """
    )
    op.execute("ALTER TABLE models ADD COLUMN spec VARCHAR")
    op.execute("ALTER TABLE results ADD COLUMN prompt_tokens INTEGER")
    op.execute("ALTER TABLE results ADD COLUMN completion_tokens INTEGER")


def downgrade() -> None:
    op.execute("ALTER TABLE results DROP COLUMN completion_tokens")
    op.execute("ALTER TABLE results DROP COLUMN prompt_tokens")
    op.execute("ALTER TABLE models DROP COLUMN spec")
    op.execute("DROP TABLE shards")
    op.execute("DROP TABLE api_tokens")
    op.execute("DROP SEQUENCE shards_id_seq")
    op.execute("DROP SEQUENCE api_tokens_id_seq")
