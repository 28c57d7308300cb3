"""The history of benchmark categories: every change an import made to a stored benchmark's
category, since it moves the Total of every pair that holds the benchmark.

A benchmark's category is the taxonomy's, else the first one its results name; an import that
names a category for an "Uncategorized" benchmark (or brings the taxonomy's for one stored before
the taxonomy knew it) changes it, and that change is kept here: the benchmark, the categories
before and after, when, and the source that named it (``import:table``, ...). An import that
names another category for a benchmark whose category was named before is refused instead
(forgetmap.db.ingest.ensure_benchmarks).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE category_changes_id_seq START 1")
    op.execute(
        """
        CREATE TABLE category_changes (
            id INTEGER DEFAULT nextval('category_changes_id_seq') PRIMARY KEY,
            benchmark_id INTEGER NOT NULL,
            old_category VARCHAR NOT NULL,
            new_category VARCHAR NOT NULL,
            changed_at TIMESTAMP NOT NULL DEFAULT now(),
            source VARCHAR
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE category_changes")
    op.execute("DROP SEQUENCE category_changes_id_seq")
