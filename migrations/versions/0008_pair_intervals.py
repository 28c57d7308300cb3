"""Cross-seed cell counts: what the map's paired interval for F_true and BT_true needs beyond the
per-seed transition counts (app.adaptive.interval_from_counts).

Per (pair, benchmark, seed_a < seed_b, k-group): how many samples paired under both seeds fall in
cell_a under seed_a and cell_b under seed_b (a cell is 2 * pre + post: 0 = 00, 1 = 01, 2 = 10,
3 = 11). The diagonal seed_a = seed_b is the ``transitions`` table; only non-zero cells are stored.

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
    # no primary key: refresh_counts writes each (pair, benchmark)'s rows at once from one GROUP BY
    # (unique by construction), and an index would slow that bulk insert (see 0001's results)
    op.execute(
        """
        CREATE TABLE cross_seed_cells (
            pair_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed_a INTEGER NOT NULL,
            seed_b INTEGER NOT NULL,
            num_choices SMALLINT NOT NULL,
            cell_a TINYINT NOT NULL,
            cell_b TINYINT NOT NULL,
            n BIGINT NOT NULL
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE cross_seed_cells")
