"""Each answer's status (``results.answer_status``) and each count row's causes (``causes``).

Before this revision ``results.truncated`` mixed "the token limit came first" with "no answer
could be extracted" (lighteval's empty ``extracted_predictions``, lm-eval's ``[invalid]``). Now
each answer has one status, ``answered``, ``no_answer``, ``truncated`` or ``refused``
(``forgetmap.core.answer_status``; NULL: the source does not say), and the count tables keep the
samples of each set of causes apart: ``transitions``, ``seed_transitions`` and
``cross_seed_cells`` gain ``causes`` (the bits of the statuses other than ``answered`` on either
side, ``forgetmap.core.answer_status.CAUSE_BITS``), so that the map can leave any set of causes out
of every count, intervals and noise floors included.

What was stored keeps its numbers: a result marked truncated becomes ``truncated`` (the file
it came from is not here to tell a missing answer from a cut one; importing it again does), and
a transition row's cut-off samples (``t_00`` ... ``t_11``) become the row's ``causes = 1``
(truncated) part beside the ``causes = 0`` rest. Seed-vs-seed and cross-seed counts stored before
have ``causes = 0``: they were counted on all samples, and a map that leaves causes out leaves
them on all samples until the next import of the pair's models counts them again.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

CELLS = ("00", "01", "10", "11")
COUNTS = ", ".join(f"n_{c}" for c in CELLS)


def upgrade() -> None:
    op.execute("ALTER TABLE results ADD COLUMN answer_status VARCHAR")
    op.execute("UPDATE results SET answer_status = 'truncated' WHERE truncated")
    op.execute("ALTER TABLE results DROP COLUMN truncated")
    counts = ",\n".join(f"n_{c} BIGINT NOT NULL" for c in CELLS)
    op.execute(
        f"""
        CREATE TABLE transitions_new (
            pair_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            num_choices SMALLINT NOT NULL,
            causes UTINYINT NOT NULL,
            {counts},
            PRIMARY KEY (pair_id, benchmark_id, seed, num_choices, causes)
        )
        """
    )
    keys = "pair_id, benchmark_id, seed, num_choices"
    rest = ", ".join(f"n_{c} - t_{c}" for c in CELLS)
    cut = ", ".join(f"t_{c}" for c in CELLS)
    op.execute(
        f"""
        INSERT INTO transitions_new
        SELECT {keys}, 0, {rest} FROM transitions """
        f"""WHERE {" + ".join(f"n_{c} - t_{c}" for c in CELLS)} > 0
        UNION ALL
        SELECT {keys}, 1, {cut} FROM transitions WHERE {" + ".join(f"t_{c}" for c in CELLS)} > 0
        """
    )
    op.execute("DROP TABLE transitions")
    op.execute("ALTER TABLE transitions_new RENAME TO transitions")
    op.execute(
        f"""
        CREATE TABLE seed_transitions_new (
            model_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed_a INTEGER NOT NULL,
            seed_b INTEGER NOT NULL,
            num_choices SMALLINT NOT NULL,
            causes UTINYINT NOT NULL,
            {counts},
            PRIMARY KEY (model_id, benchmark_id, seed_a, seed_b, num_choices, causes)
        )
        """
    )
    op.execute(
        "INSERT INTO seed_transitions_new SELECT model_id, benchmark_id, seed_a, seed_b, "
        f"num_choices, 0, {COUNTS} FROM seed_transitions"
    )
    op.execute("DROP TABLE seed_transitions")
    op.execute("ALTER TABLE seed_transitions_new RENAME TO seed_transitions")
    op.execute("ALTER TABLE cross_seed_cells ADD COLUMN causes UTINYINT NOT NULL DEFAULT 0")


def downgrade() -> None:
    op.execute("ALTER TABLE cross_seed_cells DROP COLUMN causes")
    counts = ",\n".join(f"n_{c} BIGINT NOT NULL" for c in CELLS)
    op.execute(
        f"""
        CREATE TABLE seed_transitions_old (
            model_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed_a INTEGER NOT NULL,
            seed_b INTEGER NOT NULL,
            num_choices SMALLINT NOT NULL,
            {counts},
            PRIMARY KEY (model_id, benchmark_id, seed_a, seed_b, num_choices)
        )
        """
    )
    sums = ", ".join(f"sum(n_{c})" for c in CELLS)
    op.execute(
        "INSERT INTO seed_transitions_old SELECT model_id, benchmark_id, seed_a, seed_b, "
        f"num_choices, {sums} FROM seed_transitions GROUP BY ALL"
    )
    op.execute("DROP TABLE seed_transitions")
    op.execute("ALTER TABLE seed_transitions_old RENAME TO seed_transitions")
    cut = ",\n".join(f"t_{c} BIGINT NOT NULL DEFAULT 0" for c in CELLS)
    op.execute(
        f"""
        CREATE TABLE transitions_old (
            pair_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            num_choices SMALLINT NOT NULL,
            {counts},
            {cut},
            PRIMARY KEY (pair_id, benchmark_id, seed, num_choices)
        )
        """
    )
    any_cause = ", ".join(f"sum(n_{c}) FILTER (WHERE causes <> 0)" for c in CELLS)
    op.execute(
        f"""
        INSERT INTO transitions_old
        SELECT pair_id, benchmark_id, seed, num_choices, {", ".join(f"sum(n_{c})" for c in CELLS)},
               {", ".join(f"coalesce({s}, 0)" for s in any_cause.split(", "))}
        FROM transitions GROUP BY ALL
        """
    )
    op.execute("DROP TABLE transitions")
    op.execute("ALTER TABLE transitions_old RENAME TO transitions")
    op.execute("ALTER TABLE results ADD COLUMN truncated BOOLEAN")
    op.execute(
        "UPDATE results SET truncated = answer_status IN ('truncated', 'no_answer', 'refused') "
        "WHERE answer_status IS NOT NULL"
    )
    op.execute("ALTER TABLE results DROP COLUMN answer_status")
