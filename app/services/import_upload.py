"""The client side of ``POST /api/imports``: a file, or a folder as a tar made on the fly, streamed
to a running app, then its import job followed to its end. For `forgetmap import ... --url` and
scripts; it needs no web framework and never opens the database.
"""

from __future__ import annotations

import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import httpx
from forgetmap.contract.errors import reply_detail
from forgetmap.contract.imports import ImportOptions
from forgetmap.core.errors import InputError

CHUNK = 1 << 20
NOTHING = " (nothing was imported)"


class ImportFailed(InputError):
    """The app refused the upload or its import failed; the message is the whole line."""


def _tar_entries(folder: Path) -> list[tuple[bytes, Path, int]]:
    """(header, file, size) of each regular file under ``folder``, named relative to it; links
    are left out (the app refuses them)."""
    return _entries(
        [
            (path.relative_to(folder).as_posix(), path)
            for path in sorted(folder.rglob("*"))
            if not path.is_symlink() and path.is_file()
        ]
    )


def _entries(named: list[tuple[str, Path]]) -> list[tuple[bytes, Path, int]]:
    entries = []
    for name, path in named:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = path.stat().st_size, 0o600, int(path.stat().st_mtime)
        entries.append((info.tobuf(format=tarfile.PAX_FORMAT), path, info.size))
    return entries


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    sent = 0
    with path.open("rb") as fh:
        while sent < size and (chunk := fh.read(min(CHUNK, size - sent))):
            sent += len(chunk)
            yield chunk
    if sent != size:
        raise ImportFailed(f"{path} changed while it was sent{NOTHING}")


def _tar_chunks(entries: list[tuple[bytes, Path, int]]) -> Iterator[bytes]:
    for header, path, size in entries:
        yield header
        yield from _file_chunks(path, size)
        yield b"\0" * (-size % 512)
    yield b"\0" * 1024


def upload_body(path: Path, beside: Sequence[Path] = ()) -> tuple[str, int, Iterator[bytes]]:
    """(file name, size in bytes, the bytes in chunks) of what to send for ``path``: the file, a
    folder as a tar (its size known before a byte is sent, so the app can refuse it at once), or
    the file and the files ``beside`` it as one tar of them by their names (an lm-eval samples
    file with its run's results file, where its reader finds the run's filters)."""
    path = Path(path)
    if path.is_dir():
        entries = _tar_entries(path)
        if not entries:
            raise ImportFailed(f"{path}: the folder holds no files{NOTHING}")
        return f"{path.resolve().name or 'folder'}.tar", _tar_size(entries), _tar_chunks(entries)
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file or folder{NOTHING}")
    if beside:
        entries = _entries([(p.name, p) for p in (path, *beside)])
        return f"{path.name}.tar", _tar_size(entries), _tar_chunks(entries)
    size = path.stat().st_size
    return path.name, size, _file_chunks(path, size)


def _tar_size(entries: list[tuple[bytes, Path, int]]) -> int:
    return sum(len(h) + s + (-s % 512) for h, _, s in entries) + 1024


def _detail(reply: httpx.Response) -> str:
    return reply_detail(reply) or f"the app answered {reply.status_code}"


def upload_import(
    url: str,
    token: str,
    path: Path,
    options: ImportOptions,
    *,
    beside: Sequence[Path] = (),
    on_progress: Callable[[str, int, int], None] | None = None,
    poll_seconds: float = 0.5,
    timeout: float = 60.0,
) -> dict:
    """Send ``path`` (with the files ``beside`` it: ``upload_body``) to the app at ``url`` to
    import with ``options`` (token of role submit) and
    wait for its job: the finished job (``GET /api/jobs/{id}``; its ``request.result`` and
    ``request.lines`` say what was imported, ``request.notices`` what the readers told).
    ``on_progress(stage, done, total)`` hears the job's progress. Raises ImportFailed with the
    app's one line when the upload is refused or the import fails (then nothing was imported)."""
    filename, size, chunks = upload_body(path, beside)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=timeout) as client:
        reply = client.post(
            "/api/imports",
            params=[*options.as_query(), ("filename", filename)],
            content=chunks,
            headers={"Content-Length": str(size), "Content-Type": "application/octet-stream"},
        )
        if reply.status_code != 202:
            raise ImportFailed(_detail(reply) + NOTHING)
        job_id = reply.json()["id"]
        while True:
            job = client.get(f"/api/jobs/{job_id}")
            if job.status_code != 200:
                raise ImportFailed(f"job {job_id}: {_detail(job)}")
            job = job.json()
            if job["status"] == "done":
                return job
            if job["status"] != "queued" and job["status"] != "running":
                raise ImportFailed(job.get("error") or f"job {job_id} ended {job['status']}")
            if on_progress is not None and job.get("progress"):
                p = job["progress"]
                on_progress(p["stage"], p["done"], p["total"])
            time.sleep(poll_seconds)
