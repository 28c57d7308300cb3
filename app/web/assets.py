"""The static files (``/static``): named by version, cached for a year, sent compressed.

plotly.js alone is 4.8 MB. Served as Starlette serves a file, every page that draws a chart
sent it whole, uncompressed and without a cache lifetime, so a browser asked again on each visit
(and got it again unless its own heuristics kept it). Here:

- a page names an asset by ``asset_url(name)``: ``/static/<name>?v=<version>``, the version the
  first 12 hex digits of the file's md5. A request carrying the file's current version is
  answered ``Cache-Control: public, max-age=31536000, immutable``: a changed file has another URL,
  so a year is safe. Without the version (or with an old one) the answer is ``no-cache``: the
  browser asks again with the ETag and gets a 304 when nothing changed;
- text assets (scripts, style sheets, SVG, JSON, source maps) of at least ``COMPRESS_FROM``
  bytes go gzip-compressed to a client that accepts gzip (``Vary: Accept-Encoding``), compressed
  once per file version and kept in memory by this object: plotly.min.js 4.8 MB -> 1.4 MB.
  The compressed answer keeps the file's ETag, made weak (the same content, another encoding),
  so a revalidation is a 304 whichever encoding the browser holds. Range requests get the file
  as Starlette serves it (a browser never asks for a range of a script).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from pathlib import Path
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

COMPRESSIBLE = frozenset({".js", ".css", ".svg", ".json", ".map", ".html", ".txt"})
COMPRESS_FROM = 1024
"""Bytes below which a file goes as it is (gzip's header would eat the gain)."""
VERSION_CHARS = 12
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


class Assets(StaticFiles):
    """StaticFiles over one folder, with versions, cache lifetimes and gzip (module docstring).
    The versions and compressed bodies it computes are its own, keyed by each file's path,
    size and modification time, so a file replaced on disk is read again."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory=directory)
        self.root = Path(directory)
        self._lock = threading.Lock()
        self._versions: dict[Path, tuple[tuple[int, int], str]] = {}
        self._gzipped: dict[Path, tuple[tuple[int, int], bytes]] = {}

    def version(self, path: Path, stat_result: os.stat_result | None = None) -> str:
        """The version of the file at ``path`` (its md5's first hex digits)."""
        stat_result = stat_result or path.stat()
        key = (stat_result.st_size, stat_result.st_mtime_ns)
        with self._lock:
            known = self._versions.get(path)
        if known and known[0] == key:
            return known[1]
        digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()[:VERSION_CHARS]
        with self._lock:
            self._versions[path] = (key, digest)
        return digest

    def url(self, name: str) -> str:
        """``/static/<name>?v=<version>`` for a file of this folder (the templates' asset_url)."""
        return f"/static/{name}?v={self.version(self.root / name)}"

    def _gzip(self, path: Path, stat_result: os.stat_result) -> bytes:
        key = (stat_result.st_size, stat_result.st_mtime_ns)
        with self._lock:
            known = self._gzipped.get(path)
        if known and known[0] == key:
            return known[1]
        body = gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)
        with self._lock:
            self._gzipped[path] = (key, body)
        return body

    def file_response(
        self,
        full_path: os.PathLike[str] | str,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        path = Path(full_path)
        response = super().file_response(full_path, stat_result, scope, status_code)
        asked = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [])
        current = asked == [self.version(path, stat_result)]
        response.headers["cache-control"] = IMMUTABLE if current else REVALIDATE
        if path.suffix in COMPRESSIBLE:
            response.headers["vary"] = "Accept-Encoding"
        request = Headers(scope=scope)
        if (
            response.status_code != 200
            or scope.get("method") != "GET"
            or path.suffix not in COMPRESSIBLE
            or stat_result.st_size < COMPRESS_FROM
            or "range" in request
            or not _accepts_gzip(request.get("accept-encoding", ""))
        ):
            return response
        headers = {
            key: value
            for key, value in response.headers.items()
            if key not in ("content-length", "accept-ranges", "content-type")
        }
        headers["etag"] = "W/" + response.headers["etag"]
        headers["content-encoding"] = "gzip"
        return Response(
            self._gzip(path, stat_result), headers=headers, media_type=response.media_type
        )


def _accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value allows gzip (``gzip`` or ``*``, not with ``q=0``)."""
    for part in accept_encoding.split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            q = params.strip().lower()
            if not q.startswith("q="):
                return True
            try:
                return float(q[2:]) > 0
            except ValueError:
                return False
    return False
