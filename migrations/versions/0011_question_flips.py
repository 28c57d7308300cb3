"""The atlas's tables: every question some pair flipped (``flipped_questions``) and every flip
(``question_flips``).

``flipped_questions`` names each such question once, with an integer id (the atlas groups a
million flips by it, not by text keys) and its text (the question, else the whole prompt, of one
of its rows), so a page of the atlas never looks through the per-sample rows. ``question_flips``
holds one row per (pair, question, seed) whose paired answers differ: ``forgot`` is true for 1->0
and false for 0->1, ``num_choices`` the sample's k (0: generative). Both are kept current with the
transition counts by ``forgetmap.db.pairing.refresh_counts``; the pairs already stored are filled
here from their results, paired as the counts pair them (links by question text, ambiguous keys and
mismatched documents left out).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

AMBIGUOUS_MARK = "~ambiguous"  # forgetmap.core.sample_marks.AMBIGUOUS_MARK when this was written


def upgrade() -> None:
    op.execute("CREATE SEQUENCE flipped_questions_id_seq START 1")
    op.execute(
        """
        CREATE TABLE flipped_questions (
            id INTEGER PRIMARY KEY DEFAULT nextval('flipped_questions_id_seq'),
            benchmark_id INTEGER NOT NULL,
            sample_id VARCHAR NOT NULL,
            question VARCHAR,
            UNIQUE (benchmark_id, sample_id)
        )
        """
    )
    # no key: refresh_counts rewrites each (pair, benchmark, seed) at once (see 0009)
    op.execute(
        """
        CREATE TABLE question_flips (
            pair_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            question_id INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            num_choices SMALLINT NOT NULL,
            forgot BOOLEAN NOT NULL
        )
        """
    )
    op.execute(
        f"""
        CREATE TEMP TABLE old_flips AS
        WITH post AS (
            SELECT pr.id AS pair_id, r.benchmark_id, r.seed, r.correct, r.num_choices, r.doc_hash,
                   coalesce(l.base_sample_id, r.sample_id) AS sample_id,
                   strpos(r.sample_id, '{AMBIGUOUS_MARK}') > 0 AS ambiguous
            FROM pairs pr JOIN results r ON r.model_id = pr.post_model_id
            LEFT JOIN sample_links l ON l.pair_id = pr.id AND l.benchmark_id = r.benchmark_id
                                    AND l.post_sample_id = r.sample_id
        )
        SELECT pr.id AS pair_id, b.benchmark_id, b.seed, b.sample_id,
               coalesce(b.num_choices, p.num_choices, 0) AS k, b.correct AS forgot,
               coalesce(b.question, CASE WHEN b.prompt_template_id IS NULL THEN b.prompt ELSE
                   (SELECT t.prefix || coalesce(b.prompt, b.question) || t.suffix
                    FROM prompt_templates t WHERE t.id = b.prompt_template_id) END) AS text
        FROM pairs pr
        JOIN results b ON b.model_id = pr.base_model_id
        JOIN post p ON p.pair_id = pr.id AND p.benchmark_id = b.benchmark_id
                   AND p.seed = b.seed AND p.sample_id = b.sample_id
        WHERE b.correct <> p.correct AND NOT p.ambiguous
          AND strpos(b.sample_id, '{AMBIGUOUS_MARK}') = 0
          AND NOT coalesce(b.doc_hash <> p.doc_hash, false)
        """
    )
    op.execute(
        "INSERT INTO flipped_questions (benchmark_id, sample_id, question) "
        "SELECT benchmark_id, sample_id, any_value(text) FROM old_flips "
        "GROUP BY benchmark_id, sample_id ORDER BY benchmark_id, sample_id"
    )
    op.execute(
        "INSERT INTO question_flips SELECT f.pair_id, f.benchmark_id, q.id, f.seed, f.k, f.forgot "
        "FROM old_flips f JOIN flipped_questions q USING (benchmark_id, sample_id)"
    )
    op.execute("DROP TABLE old_flips")


def downgrade() -> None:
    op.execute("DROP TABLE question_flips")
    op.execute("DROP TABLE flipped_questions")
    op.execute("DROP SEQUENCE flipped_questions_id_seq")
