"""Merge sweeps (issue 54): a shard run by another shard's worker, and a series whose axis is
the merge's mix rather than the training step.

``shards.parent_id``: the merge shard whose worker builds the merged checkpoint and then runs
this evaluation shard itself (the checkpoint exists only on that worker's disk); such a shard is
never sent to the broker on its own, and its progress keeps its parent alive. NULL for every
shard sent alone, as before.

``series.axis``: ``step`` (a training run, as before) or ``mix`` (a merge sweep: a checkpoint's
``step`` is its mix in thousandths, the post model's share; 1000 is the post model itself).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE shards ADD COLUMN parent_id INTEGER")
    op.execute("ALTER TABLE series ADD COLUMN axis VARCHAR DEFAULT 'step'")


def downgrade() -> None:
    op.execute("ALTER TABLE series DROP COLUMN axis")
    op.execute("ALTER TABLE shards DROP COLUMN parent_id")
