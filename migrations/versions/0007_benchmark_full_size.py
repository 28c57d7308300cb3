"""A benchmark's full size, when a job learned it (adaptive evaluation stops before the end: a
pair whose paired samples are fewer than the full size is shown as partial).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # samples the benchmark has (as the worker's loader saw it); NULL: not known (imported results)
    op.execute("ALTER TABLE benchmarks ADD COLUMN full_size BIGINT")


def downgrade() -> None:
    op.execute("ALTER TABLE benchmarks DROP COLUMN full_size")
