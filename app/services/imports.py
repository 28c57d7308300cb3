"""Imports through the app: an uploaded file (a table, an lm-eval samples file, or a details
folder or output tree as a zip or tar archive) staged on disk, unpacked safely, and imported as a
job on a thread of the app, with the command line's checks, messages and one transaction.

The app owns the database, so it runs the import itself: the upload is written, as it arrives,
into a private folder of ``<db>.imports/`` beside the database (never held in memory); the job
(a row of ``jobs`` of kind ``import``) is answered at once, and one thread imports the staged
uploads in turn. While an import runs, its progress lives in this process (the import's
transaction holds the store's write lock, so it cannot be written meanwhile); its end (the
summary, or the one-line error) is written to the job. The staged folder is removed when the
job ends, and whatever a stopped app left there is removed, and its unfinished import jobs
marked failed, when the app starts again.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import stat
import tarfile
import tempfile
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from forgetmap.contract.imports import (
    IMPORT_JOB_KIND,
    ImportOptions,
    filter_notice,
    summary_lines,
    summary_of,
)
from forgetmap.contract.jobs import JobStatus
from forgetmap.core.display import binary_size
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.db.store import Store
from forgetmap.importers import import_file
from forgetmap.importers.lm_eval.reader import parse_filter_options
from forgetmap.runtime.config import MAX_MEMBERS, MAX_UNPACK_RATIO
from forgetmap.runtime.private import make_private

STAGING_SUFFIX = ".imports"
MAX_NAME = 255
COPY_CHUNK = 1 << 20
INTERRUPTED = (
    "the app stopped before this import finished: upload the file again (an import stores "
    "nothing twice)"
)
log = logging.getLogger("forgetmap.imports")


class UploadTooLarge(Exception):
    """An upload over the limit (answered with 413)."""


def staging_folder(db_path: Path) -> Path:
    """Where uploads are staged: ``<db>.imports/`` beside the database."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + STAGING_SUFFIX)


def too_large_message(size: int, limit: int) -> str:
    return (
        f"the upload of {size:,} bytes is over the limit of {binary_size(limit)} "
        "(FORGETMAP_IMPORT_MAX_BYTES); import it on the app's machine, or raise the limit"
    )


def upload_name(filename: str) -> str:
    """The client's name of the uploaded file, checked: a plain file name (the table reader tells
    its format by the suffix, lm-eval's task is in the samples file's name)."""
    name = filename.strip()
    if (
        not name
        or len(name) > MAX_NAME
        or name in (".", "..")
        or any(c in name for c in "/\\\0")
        or any(ord(c) < 32 for c in name)
    ):
        raise InputError(
            f"filename {filename[:80]!r} is not a file name (at most {MAX_NAME} characters, "
            "no folders: e.g. instruct.csv, samples_gsm8k_2024.jsonl or details.zip)"
        )
    return name


def check_options(options: ImportOptions) -> None:
    """What the readers would refuse about the options alone, refused before an upload is read."""
    parse_filter_options(list(options.filters))


class StagedUpload:
    """An upload being written to a private folder of the staging area, its bytes counted."""

    def __init__(self, staging: Path, name: str, limit: int):
        staging.mkdir(mode=0o700, parents=True, exist_ok=True)
        make_private(staging)  # one an older forgetmap made 0755
        self.folder = Path(tempfile.mkdtemp(prefix="upload-", dir=staging))  # mode 0700
        self.name, self.limit, self.size = name, limit, 0
        self.path = self.folder / "upload"
        self._file = open(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")  # noqa: SIM115 - closed by close() or discard()

    def write(self, chunk: bytes) -> None:
        """Write a part of the body; UploadTooLarge once the upload passes the limit."""
        self.size += len(chunk)
        if self.size > self.limit:
            raise UploadTooLarge(too_large_message(self.size, self.limit))
        self._file.write(chunk)

    def close(self) -> None:
        self._file.close()
        if self.size == 0:
            raise InputError("the upload is empty: send the file as the request's body")

    def discard(self) -> None:
        self._file.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# ------------------------------------------------------------------------------ archives


def archive_kind(path: Path) -> str | None:
    """ "zip", "tar" (plain or compressed) or None (a file to import as it is), by its first
    bytes."""
    with path.open("rb") as fh:
        head = fh.read(512)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00":
        return "tar"
    if len(head) == 512 and head[257:262] == b"ustar":
        return "tar"
    return None


def member_path(name: str) -> PurePosixPath | None:
    """An archive member's path inside the unpacked folder; None for the folder itself; an
    InputError for a path that would leave it (absolute, ``..``) or that names nothing."""
    if "\0" in name or "\\" in name:
        raise InputError(
            f"archive member {name[:200]!r}: a name with a backslash or NUL is refused"
        )
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise InputError(
            f"archive member {name[:200]!r} points outside the archive's folder: refused"
        )
    parts = [p for p in path.parts if p != "."]
    return PurePosixPath(*parts) if parts else None


class Unpacker:
    """Writes an archive's regular files and folders under ``root`` and nothing else: members
    that are links, devices or pipes, that leave the folder, come twice, or pass the member
    and byte limits are refused (the import fails, and its folder is removed)."""

    def __init__(
        self, root: Path, max_bytes: int, max_members: int, report: Callable, packed: int = 0
    ):
        self.root, self.max_bytes, self.max_members, self.report = (
            root,
            max_bytes,
            max_members,
            report,
        )
        self.packed = packed  # the archive's own size in bytes; 0: no ratio check
        self.members = self.bytes = 0
        root.mkdir(mode=0o700)

    def _count(self, name: str) -> None:
        self.members += 1
        if self.members > self.max_members:
            raise InputError(f"the archive holds more than {self.max_members:,} members: refused")
        self.report("unpack", self.members, 0)

    def folder(self, name: str) -> None:
        self._count(name)
        relative = member_path(name)
        if relative is not None:
            (self.root / relative).mkdir(mode=0o700, parents=True, exist_ok=True)

    def file(self, name: str, source) -> None:
        self._count(name)
        relative = member_path(name)
        if relative is None:
            raise InputError(f"archive member {name!r} names no file")
        target = self.root / relative
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            raise InputError(f"archive member {name!r} comes twice: refused") from None
        with open(fd, "wb") as out:
            while chunk := source.read(COPY_CHUNK):
                self.bytes += len(chunk)
                self._check_size()
                out.write(chunk)

    def _check_size(self) -> None:
        """Refuse the archive once the bytes written pass either limit (counted, not read from
        its headers, which an archive may state falsely)."""
        if self.packed and self.bytes > MAX_UNPACK_RATIO * self.packed:
            raise InputError(
                f"the archive unpacks to more than {MAX_UNPACK_RATIO} times its own "
                f"{self.packed:,} bytes (a compression bomb?): refused; send the files "
                "uncompressed or less compressed"
            )
        if self.bytes > self.max_bytes:
            raise InputError(
                f"the archive unpacks to more than {binary_size(self.max_bytes)} "
                "(FORGETMAP_IMPORT_MAX_UNPACKED_BYTES): refused"
            )


def unpack(archive: Path, kind: str, root: Path, *, max_bytes: int, report: Callable) -> None:
    """Unpack a zip or tar (.tar, .tar.gz, .tar.bz2, .tar.xz) into the new folder ``root``."""
    unpacker = Unpacker(root, max_bytes, MAX_MEMBERS, report, packed=archive.stat().st_size)
    if kind == "zip":
        try:
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if info.filename.startswith("__MACOSX/"):  # Finder's resource forks
                        continue
                    mode = info.external_attr >> 16
                    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                        raise InputError(
                            f"archive member {info.filename!r} is a link or a special file: refused"
                        )
                    if info.flag_bits & 0x1:
                        raise InputError(f"archive member {info.filename!r} is encrypted")
                    if info.is_dir():
                        unpacker.folder(info.filename)
                    else:
                        with zf.open(info) as source:
                            unpacker.file(info.filename, source)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
            raise InputError(f"the zip archive cannot be read: {exc}") from None
        return
    try:
        with tarfile.open(archive, mode="r|*") as tf:
            for member in tf:
                if member.isdir():
                    unpacker.folder(member.name)
                elif member.isfile():
                    unpacker.file(member.name, tf.extractfile(member))
                else:
                    raise InputError(
                        f"archive member {member.name!r} is a link or a special file: refused"
                    )
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"the tar archive cannot be read: {exc}") from None


def import_path(root: Path) -> Path:
    """What to import from an unpacked folder: its one file when it holds just one, else the
    folder (a details folder, an output tree, a folder of samples files)."""
    files = [p for p in root.rglob("*") if p.is_file()]
    if not files:
        raise InputError("the archive holds no files")
    return files[0] if len(files) == 1 else root


# ------------------------------------------------------------------------------ the jobs


@dataclass(frozen=True)
class ImportTask:
    job_id: int
    upload: StagedUpload
    options: ImportOptions


class ImportRunner:
    """The app's import jobs: writes each job, runs the staged uploads one at a time on a thread
    of its own, keeps their progress while they run."""

    def __init__(self, store: Store, staging: Path, *, max_bytes: int, max_unpacked_bytes: int):
        self.store, self.staging = store, staging
        self.max_bytes, self.max_unpacked_bytes = max_bytes, max_unpacked_bytes
        self._tasks: queue.Queue[ImportTask] = queue.Queue()
        self._progress: dict[int, dict] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def settle_interrupted(self) -> list[int]:
        """At start: remove what a stopped app left in the staging folder and mark its unfinished
        import jobs failed (their transactions never committed). Returns their ids."""
        shutil.rmtree(self.staging, ignore_errors=True)
        with self.store.transaction() as conn:
            ids = jobs_db.unfinished_jobs(conn, IMPORT_JOB_KIND)
            for job_id in ids:
                jobs_db.end_job(conn, job_id, JobStatus.failed, error=INTERRUPTED)
        return ids

    def stage(self, filename: str) -> StagedUpload:
        return StagedUpload(self.staging, upload_name(filename), self.max_bytes)

    def submit(self, upload: StagedUpload, options: ImportOptions, owner: str) -> int:
        """Write the job (queued) and hand the staged upload to the import thread; its id."""
        payload = {
            "import": {
                "kind": options.kind,
                "file": upload.name,
                "bytes": upload.size,
                **options.described(),
            }
        }
        with self.store.transaction() as conn:
            job_id = jobs_db.insert_job(conn, IMPORT_JOB_KIND, payload)
            jobs_db.set_owner(conn, job_id, owner)
        with self._lock:
            self._progress[job_id] = {"stage": "queued", "done": 0, "total": 0}
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="forgetmap-imports", daemon=True
                )
                self._thread.start()
        self._tasks.put(ImportTask(job_id, upload, options))
        return job_id

    def progress(self, job_id: int) -> dict | None:
        """A running or queued import's stage and counts; None once it ended (or never ran here)."""
        with self._lock:
            found = self._progress.get(job_id)
            return dict(found) if found else None

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            try:
                self._run(task)
            except Exception:  # the thread goes on with the next upload; the job says what
                log.exception("import job %s failed", task.job_id)
            finally:
                task.upload.discard()
                with self._lock:
                    self._progress.pop(task.job_id, None)

    def _report(self, job_id: int) -> Callable[[str, int, int], None]:
        def report(stage: str, done: int, total: int) -> None:
            with self._lock:
                self._progress[job_id] = {"stage": stage, "done": done, "total": total}

        return report

    def _run(self, task: ImportTask) -> None:
        job_id, upload, options = task.job_id, task.upload, task.options
        report = self._report(job_id)
        with self.store.transaction() as conn:
            jobs_db.set_job_status(conn, job_id, JobStatus.running)
        notices: list[str] = []
        tree = upload.folder / "files"
        try:
            # an inspect_ai .eval log is a zip archive that its reader opens itself
            eval_log = options.kind == "inspect" and upload.name.endswith(".eval")
            kind = None if eval_log else archive_kind(upload.path)
            if kind is None:
                path = upload.path.rename(upload.folder / upload.name)
            else:
                unpack(upload.path, kind, tree, max_bytes=self.max_unpacked_bytes, report=report)
                upload.path.unlink()
                path = import_path(tree)
            summary = import_file(
                self.store,
                options.kind,
                path,
                progress=report,
                on_filter=lambda *told: notices.append(filter_notice(*told)),
                notice=notices.append,
                **options.importer_kwargs(),
            )
        except InputError as exc:
            error = f"{_shown(str(exc), upload, tree)} (nothing was imported)"
            self._end(job_id, JobStatus.failed, error=error, notices=notices, upload=upload)
            return
        except Exception as exc:
            first_line = (str(exc).splitlines() or [""])[0]
            error = (
                f"the import failed: {type(exc).__name__}: "
                f"{_shown(first_line, upload, tree)} (nothing was imported)"
            )
            self._end(job_id, JobStatus.failed, error=error, notices=notices, upload=upload)
            raise
        self._end(
            job_id, JobStatus.done, result=summary_of(summary), notices=notices, upload=upload
        )

    def _end(
        self,
        job_id: int,
        status: str,
        *,
        upload: StagedUpload,
        notices: list[str],
        result: dict | None = None,
        error: str | None = None,
    ) -> None:
        notices = [_shown(n, upload, upload.folder / "files") for n in notices]
        with self.store.transaction() as conn:
            payload = jobs_db.job_payload(conn, job_id)
            payload["notices"] = notices
            if result is not None:  # the lines the command line prints, for the job page
                payload.update(result=result, lines=summary_lines(result))
            jobs_db.end_job(conn, job_id, status, payload=payload, error=error)


def _shown(message: str, upload: StagedUpload, tree: Path) -> str:
    """A message about staged files told with the upload's own names, not the app's paths."""
    return (
        message.replace(f"{tree}/", "")
        .replace(str(tree), upload.name)
        .replace(str(upload.folder / upload.name), upload.name)
        .replace(str(upload.folder), upload.name)
    )
