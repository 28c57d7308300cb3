"""Sample identity across prompt templates: the question of each sample, ambiguous and by-rule
pairing counts, and links made by question text.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # the question part of the prompt (template removed), shown in lists and used to link samples
    op.execute("ALTER TABLE results ADD COLUMN question VARCHAR")
    # per (pair, benchmark, seed): samples left unpaired because their key is shared within a
    # file, and how the paired ones were matched (by question key, by question text)
    op.execute("ALTER TABLE coverage ADD COLUMN ambiguous BIGINT DEFAULT 0")
    op.execute("ALTER TABLE coverage ADD COLUMN by_question BIGINT DEFAULT 0")
    op.execute("ALTER TABLE coverage ADD COLUMN by_text BIGINT DEFAULT 0")
    # a post sample matched to a base sample because one's prompt contains the other's question
    op.execute(
        """
        CREATE TABLE sample_links (
            pair_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            base_sample_id VARCHAR NOT NULL,
            post_sample_id VARCHAR NOT NULL,
            PRIMARY KEY (pair_id, benchmark_id, post_sample_id)
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE sample_links")
    for column in ("by_text", "by_question", "ambiguous"):
        op.execute(f"ALTER TABLE coverage DROP COLUMN {column}")
    op.execute("ALTER TABLE results DROP COLUMN question")
