"""Long answers, kept beside the database in Parquet files (``<db>.texts/``).

A reasoning model's answer runs to thousands of tokens (the paper's chat models: up to 32,768
new ones). Stored in the DuckDB file, such texts cost more than the rest of an import together:
DuckDB writes long strings at about 50-100 MB/s on this machine, under a memory limit at half that
(40,320 answers of ~4,000 tokens: 760 MB of text, an import of 26 s of which 21 s went to the
answers; pyarrow reads the same files in 2-4 s). So an import writes every response longer than
``LONG_TEXT_BYTES`` to one Parquet file of its own (zstd, small row groups), as it goes, and the
row keeps a reference (``results.response_ref``: the file's id << 32 | the row in the file);
shorter responses, and everything else of a row, stay in the database.

The choice and its trade-off:

- an answer costs about its compressed size (zstd, as DuckDB's own compression would), and an
  import of long answers runs at the speed of reading them (bench/import_scale.py);
- the database is then the DuckDB file *and* its ``.texts`` folder: copy, back up or move both
  (a missing file shows as such in the drill-down, nothing else breaks: the map and the counts
  never read answers);
- the drill-down reads an answer's row group (``ROW_GROUP_ROWS`` answers) from its file, a few ms;
  a text search (``q=``) scans the files with DuckDB's ``read_parquet``.

All or nothing, as an import's transaction: the file is written as ``<name>.partial`` and named
in ``text_files`` inside the transaction; only after the commit is it renamed to its name
(``TextWriter.commit``). ``reconcile`` (at every read-write open) finishes a rename a crash cut
short and deletes files no committed import names.
"""

from __future__ import annotations

import os
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from forgetmap.runtime.private import make_private

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

Connection = duckdb.DuckDBPyConnection

LONG_TEXT_BYTES = 256
"""Responses of at least this many bytes go to the import's answer file; shorter ones (a letter,
a sentence) stay in their rows. Measured on one chat model of bench/harness_import.py (564,000
chains of thought of ~150 tokens): 1,024 bytes 6.0 s, 512 bytes 4.9 s, 256 bytes 4.6 s an import
(the code before streaming: 5.1 s), 147 MB stored against 133 MB."""
ROW_GROUP_ROWS = 256
"""Answers per Parquet row group: what the drill-down decodes to show one (a few MB at most)."""
SUFFIX = ".parquet"
PARTIAL = ".partial"
MISSING = "[this answer's file {name} is missing from {folder}: restore it beside the database]"


def folder_of(database: Path) -> Path:
    """Where the answer files of a database file live: ``<file>.texts`` beside it."""
    return database.with_name(database.name + ".texts")


def database_path(conn: Connection) -> Path:
    (path,) = conn.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()[0]
    return Path(path)


class TextWriter:
    """One import's answer file: ``split`` each batch's responses, ``finish`` in the
    transaction, then ``commit`` after it (or ``discard`` when it failed: always called then, so
    that the writer's thread ends)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.file_id: int | None = None
        self.name: str | None = None
        self.writer: pq.ParquetWriter | None = None  # once a long answer comes
        self.thread: ThreadPoolExecutor | None = None  # its writes, one at a time
        self.pending: Future[None] | None = None
        self.rows = 0
        self.bytes = 0

    def split(self, conn: Connection, responses: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Per row the reference of its response in this import's file, where it is long (null
        elsewhere: the row keeps its response). The long ones are written on the writer's
        thread (zstd releases the GIL), while the import goes on."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(responses)
        long = pc.fill_null(pc.greater_equal(pc.binary_length(responses), LONG_TEXT_BYTES), False)
        count = pc.sum(long).as_py() or 0
        if not count:
            return pa.nulls(n, pa.int64())
        if self.writer is None:
            self._open(conn)
        assert self.writer is not None and self.thread is not None and self.file_id is not None
        texts = pc.filter(responses, long)
        if texts.type != pa.string():
            texts = texts.cast(pa.string())
        refs = (self.file_id << 32) + self.rows + np.arange(count, dtype=np.int64)
        rows = pa.Table.from_arrays([pa.array(refs), texts], names=["ref", "text"])
        self._wait()  # one write at a time, in order
        self.pending = self.thread.submit(
            self.writer.write_table, rows, row_group_size=ROW_GROUP_ROWS
        )
        self.rows += count
        self.bytes += pc.sum(pc.binary_length(texts)).as_py()
        mask = np.asarray(long.to_numpy(zero_copy_only=False), bool)
        ref_column = np.zeros(n, np.int64)
        ref_column[mask] = refs
        return pa.array(ref_column, mask=~mask)

    def _wait(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending.result()

    def _open(self, conn: Connection) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        make_private(self.folder)  # made before forgetmap set modes
        self.file_id = conn.execute("SELECT nextval('text_files_id_seq')").fetchall()[0][0]
        self.name = f"{self.file_id:08d}-{uuid.uuid4().hex}{SUFFIX}"
        path = self.folder / (self.name + PARTIAL)
        # created 0600 here: pyarrow opens it again with O_TRUNC, which keeps the mode
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        self.writer = pq.ParquetWriter(
            path,
            pa.schema([("ref", pa.int64()), ("text", pa.string())]),
            compression="zstd",
            compression_level=1,
            use_dictionary=False,
        )
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="answer-file")

    def finish(self, conn: Connection) -> None:
        """Close the file and name it in ``text_files`` (inside the import's transaction)."""
        if self.writer is None:
            return
        self._wait()
        assert self.thread is not None  # opened with the writer
        self.thread.shutdown()
        self.writer.close()
        conn.execute(
            "INSERT INTO text_files (id, name, rows, bytes) VALUES (?, ?, ?, ?)",
            [self.file_id, self.name, self.rows, self.bytes],
        )

    def commit(self) -> None:
        """The transaction committed: the file takes its name."""
        if self.name is not None:
            (self.folder / (self.name + PARTIAL)).rename(self.folder / self.name)

    def discard(self) -> None:
        """The transaction was rolled back: the file goes."""
        if self.writer is not None:
            assert self.thread is not None  # opened with the writer
            self.thread.shutdown(wait=True)
            self.writer.close()
        if self.name is not None:
            (self.folder / (self.name + PARTIAL)).unlink(missing_ok=True)


def reconcile(conn: Connection, folder: Path) -> None:
    """Finish what a crash left: a committed file still ``.partial`` is renamed, a file no
    committed import names (its import rolled back, or never committed) is deleted. The folder
    and the files it keeps are made private (0700, 0600) where an older forgetmap left them
    readable to others."""
    if not folder.is_dir():
        return
    make_private(folder)
    named = set(committed_names(conn))
    for path in folder.iterdir():
        name = path.name.removesuffix(PARTIAL)
        if name not in named:
            path.unlink(missing_ok=True)
            continue
        make_private(path)
        if path.name.endswith(PARTIAL):
            path.rename(folder / name)


def read_texts(conn: Connection, refs: list[int]) -> dict[int, str]:
    """The texts of answer references (each row group read once; a missing file's texts say
    so, ``MISSING``)."""
    import numpy as np
    import pyarrow.parquet as pq

    wanted = sorted({int(r) for r in refs if r is not None})
    if not wanted:
        return {}
    folder = folder_of(database_path(conn))
    ids = sorted({r >> 32 for r in wanted})
    names = dict(
        conn.execute(
            "SELECT id, name FROM text_files WHERE id IN (SELECT unnest(?))", [ids]
        ).fetchall()
    )
    found: dict[int, str] = {}
    for file_id in ids:
        mine = [r for r in wanted if r >> 32 == file_id]
        path = folder / names.get(file_id, "")
        if file_id not in names or not path.is_file():
            message = MISSING.format(name=names.get(file_id, f"#{file_id}"), folder=folder)
            found.update(dict.fromkeys(mine, message))
            continue
        parquet = pq.ParquetFile(path)
        starts = np.cumsum(
            [0] + [parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)]
        )
        rows = np.asarray([r & 0xFFFFFFFF for r in mine], np.int64)
        groups = np.searchsorted(starts, rows, side="right") - 1
        for group in np.unique(groups).tolist():
            texts = parquet.read_row_group(group, columns=["text"])["text"]
            for ref, row in zip(mine, rows.tolist(), strict=True):
                if starts[group] <= row < starts[group + 1]:
                    found[ref] = texts[row - int(starts[group])].as_py()
    return found


def committed_names(conn: Connection) -> list[str]:
    """The answer files that committed imports name, oldest first."""
    return [name for (name,) in conn.execute("SELECT name FROM text_files ORDER BY id").fetchall()]


def answer_files(conn: Connection) -> list[str]:
    """The paths of the database's answer files that are in place (for ``read_parquet``)."""
    folder = folder_of(database_path(conn))
    return [str(folder / n) for n in committed_names(conn) if (folder / n).is_file()]


def response_texts(files: list[str], *aliases: str) -> tuple[str, list[str]]:
    """SQL that reads each results row ``alias``'s whole answer, long ones from the answer files
    (``files``, as ``answer_files`` lists them, bound as ``$files``): the joins to add after the
    FROM clause, and per alias the expression of its answer. Aliases are fixed names of the
    caller's query, never a user's text."""
    if not all(a.isidentifier() for a in aliases):
        raise ValueError(f"not table aliases: {aliases!r}")
    if not files:
        return "", [f"{a}.response" for a in aliases]
    joins = " ".join(
        f"LEFT JOIN read_parquet($files) {a}_text ON {a}_text.ref = {a}.response_ref"
        for a in aliases
    )
    return joins, [f"coalesce({a}.response, {a}_text.text)" for a in aliases]
