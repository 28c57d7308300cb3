"""Cross-seed cell counts: what the map's paired interval for F_true and BT_true needs beyond the
per-seed transition counts (forgetmap.analysis.adaptive.interval_from_counts).

One row per (pair, benchmark, seed_a < seed_b, k-group) with the samples paired under both seeds:
n_<a>_<b> counts those in cell a under seed_a and cell b under seed_b (a cell is the transition,
00, 01, 10 or 11). The diagonal seed_a = seed_b is the ``transitions`` table.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

CELLS = ("00", "01", "10", "11")


def upgrade() -> None:
    # no primary key: refresh_counts writes each (pair, benchmark)'s rows at once from one GROUP BY
    # (unique by construction), and an index would slow that bulk insert (see 0001's results)
    counts = ",\n".join(f"n_{a}_{b} BIGINT NOT NULL" for a in CELLS for b in CELLS)
    op.execute(
        f"""
        CREATE TABLE cross_seed_cells (
            pair_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed_a INTEGER NOT NULL,
            seed_b INTEGER NOT NULL,
            num_choices SMALLINT NOT NULL,
            {counts}
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE cross_seed_cells")
