"""Prompt templates: what the prompts of one (model, benchmark, seed) share, stored once.

A result row with a ``prompt_template_id`` stores in ``prompt`` only its own part; the prompt is
``prefix || prompt || suffix`` (app/db/prompts.py), the own part being the row's question where
``prompt`` is NULL. Rows without one store the whole prompt.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE prompt_templates_id_seq START 1")
    op.execute(
        """
        CREATE TABLE prompt_templates (
            id INTEGER PRIMARY KEY DEFAULT nextval('prompt_templates_id_seq'),
            prefix VARCHAR NOT NULL,
            suffix VARCHAR NOT NULL
        )
        """
    )
    op.execute("ALTER TABLE results ADD COLUMN prompt_template_id INTEGER")


def downgrade() -> None:
    op.execute(
        "UPDATE results SET prompt = "
        "t.prefix || coalesce(results.prompt, results.question) || t.suffix "
        "FROM prompt_templates t WHERE t.id = results.prompt_template_id"
    )
    op.execute("ALTER TABLE results DROP COLUMN prompt_template_id")
    op.execute("DROP TABLE prompt_templates")
    op.execute("DROP SEQUENCE prompt_templates_id_seq")
