"""Named score sets: stored answers graded again by another extractor (``forgetmap rescore``).

A harness's own scores (``results.correct``) are never changed. ``forgetmap rescore NAME
--extractor E`` reads the stored responses, runs the extractor ``E`` over them
(``forgetmap.core.extractors``) and keeps what it finds as one set: ``score_sets`` names it (its
extractor, when it was made, how many rows it holds) and ``rescored`` holds one row per
(model, benchmark, seed, sample) it graded: the prediction it extracted (NULL: none), whether that
is right, the answer's status (``forgetmap.core.answer_status``) and the extractor's rule that
fired (NULL: none did).

``rescored`` has no key, as ``results``: a set is written whole, in one transaction, by the one
writer, and an index made bulk inserts 13x slower (0001's ``results``).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-09
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE score_sets_id_seq START 1")
    op.execute(
        """
        CREATE TABLE score_sets (
            id INTEGER DEFAULT nextval('score_sets_id_seq') PRIMARY KEY,
            name VARCHAR NOT NULL UNIQUE,
            extractor VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT now(),
            rows BIGINT NOT NULL DEFAULT 0
        )
        """
    )
    op.execute(
        """
        CREATE TABLE rescored (
            score_set_id INTEGER NOT NULL,
            model_id INTEGER NOT NULL,
            benchmark_id INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            sample_id VARCHAR NOT NULL,
            prediction VARCHAR,
            correct BOOLEAN NOT NULL,
            answer_status VARCHAR NOT NULL,
            rule VARCHAR
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE rescored")
    op.execute("DROP TABLE score_sets")
    op.execute("DROP SEQUENCE score_sets_id_seq")
