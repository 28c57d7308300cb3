"""Long answers beside the database (``results.response_ref`` and the ``text_files`` they lie in),
and truncated answers (``results.truncated``, counted per cell in ``transitions``).

A response longer than ``forgetmap.db.texts.LONG_TEXT_BYTES`` is written by its import to a Parquet
file in ``<db>.texts/`` (zstd) instead of the row: the row's ``response`` is then NULL and its
``response_ref`` says where the text is (the file's id << 32 | the row in the file). One file per
import; ``text_files`` names them.

``results.truncated``: the answer was cut off before it was complete (the token limit came first,
or the prompt was cut to fit the context); NULL where the source does not say. ``transitions``
counts per cell (``t_00`` ... ``t_11``) the samples with such an answer on either side, so that the
map can show how many 1->0 flips are truncations and leave them out.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from pathlib import Path

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

CELLS = ("00", "01", "10", "11")


def upgrade() -> None:
    op.execute("ALTER TABLE results ADD COLUMN response_ref BIGINT")
    op.execute("ALTER TABLE results ADD COLUMN truncated BOOLEAN")
    for cell in CELLS:
        op.execute(f"ALTER TABLE transitions ADD COLUMN t_{cell} BIGINT NOT NULL DEFAULT 0")
    op.execute("CREATE SEQUENCE text_files_id_seq START 1")
    op.execute(
        """
        CREATE TABLE text_files (
            id INTEGER DEFAULT nextval('text_files_id_seq') PRIMARY KEY,
            name VARCHAR NOT NULL UNIQUE,
            rows BIGINT NOT NULL,
            bytes BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT now()
        )
        """
    )


def downgrade() -> None:
    # the texts go back into their rows; the files themselves are left for the operator to delete
    conn = op.get_bind()
    database = conn.exec_driver_sql(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).scalar()
    folder = Path(database).with_name(Path(database).name + ".texts")
    names = [row[0] for row in conn.exec_driver_sql("SELECT name FROM text_files")]
    if names:
        files = ", ".join("'" + str(folder / n).replace("'", "''") + "'" for n in names)
        op.execute(
            f"UPDATE results SET response = t.text FROM read_parquet([{files}]) t "
            "WHERE t.ref = results.response_ref"
        )
    op.execute("ALTER TABLE results DROP COLUMN response_ref")
    op.execute("ALTER TABLE results DROP COLUMN truncated")
    for cell in CELLS:
        op.execute(f"ALTER TABLE transitions DROP COLUMN t_{cell}")
    op.execute("DROP TABLE text_files")
    op.execute("DROP SEQUENCE text_files_id_seq")
