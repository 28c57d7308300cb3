"""The owner file: how a running app tells the command line that it owns a database.

Only one process may open a DuckDB file, so while ``forgetmap serve`` (or ``up``) runs, the other
commands on that database run through it (docs/many-users.md). On start the app writes
``<db>.app.json`` beside the database: the URL it listens on, its pid, its start time, an id it
also sends on ``/healthz`` (``APP_ID_HEADER``) and a fresh local credential that acts as an admin
token of that process only (the app keeps it in memory, never in the database). The file is
created owner-only (0600) and removed on a clean exit; a reader ignores it when it is stale: its
pid is not alive, or its URL does not answer ``/healthz`` with the same app id (an app killed
with SIGKILL leaves the file behind).

The CLI sends its commands, with the file's credential, to the URL the file names, so a reader
trusts the file only when no one but its own user could have written it, and only for an app on
this machine (``untrusted_because``): a plain file (not a link), of the reader's own user, mode
0600 (no group or other bits), naming a loopback URL (127.0.0.0/8, ::1, localhost). Another file
is ignored with a warning on stderr that says why; the command then runs on the database file
itself (and fails, as it would, when an app holds the file).
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import secrets
import socket
import stat
import sys
import urllib.parse
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

APP_ID_HEADER = "X-Forgetmap-App-Id"
LOCAL_CREDENTIAL_PREFIX = "fml_"
HEALTH_TIMEOUT_SECONDS = 2.0
OWNER_FILE_SUFFIX = ".app.json"
OWNER_FILE_MAX_BYTES = 4096  # what publish writes is about 250 bytes: read no more than this

LOCAL_ONLY = frozenset(
    {
        "serve",
        "up",
        "worker",
        "watch",
        "demo",
        "suite",
        "job",
        "probe",
        "judge",
        "merge",
        "restore",
    }
)
"""Commands that never run through the app: they start processes, use no database (``job``,
``probe``, ``judge`` and ``merge`` talk to an app's API themselves), or (restore) write a new
database file themselves."""

# what a command that the app runs finds in its click context's ``obj`` (forgetmap.web.cli sets
# them, forgetmap.cli.common reads them): the app's open store, the folder the client runs in, and
# the width of the client's terminal (when it told it)
APP_STORE_KEY = "app_store"
CLIENT_CWD_KEY = "client_cwd"
CLIENT_WIDTH_KEY = "client_terminal_width"


@dataclass(frozen=True)
class Owner:
    """What the owner file holds."""

    url: str
    pid: int
    credential: str
    app_id: str
    started_at: str


def owner_path(db_path: Path | str) -> Path:
    """``<db>.app.json``, beside the database (the path resolved, as the app and the CLI may
    name the database from different folders)."""
    resolved = Path(db_path).resolve()
    return resolved.with_name(resolved.name + OWNER_FILE_SUFFIX)


def new_owner(url: str) -> Owner:
    """This process as the owner at ``url``, with a fresh credential and app id."""
    return Owner(
        url=url,
        pid=os.getpid(),
        credential=LOCAL_CREDENTIAL_PREFIX + secrets.token_urlsafe(32),
        app_id=secrets.token_hex(8),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def publish(db_path: Path | str, owner: Owner) -> Path:
    """Write the owner file, created 0600 under a temporary name and renamed over any file a
    dead owner left (this process holds the database, so no other owner is alive)."""
    path = owner_path(db_path)
    temporary = path.with_name(f"{path.name}.{owner.pid}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump(asdict(owner), out)
    os.replace(temporary, path)
    return path


def withdraw(db_path: Path | str, owner: Owner) -> None:
    """Remove the owner file if it is still this owner's."""
    path = owner_path(db_path)
    if read_owner(path) == owner:
        path.unlink(missing_ok=True)


def read_owner(path: Path) -> Owner | None:
    """The owner file's content; None when there is none or it cannot be read as one."""
    try:
        return _parse_owner(path.read_bytes()[:OWNER_FILE_MAX_BYTES])
    except OSError:
        return None


def _parse_owner(text: bytes) -> Owner | None:
    try:
        data = json.loads(text.decode("utf-8"))
        return Owner(
            url=str(data["url"]),
            pid=int(data["pid"]),
            credential=str(data["credential"]),
            app_id=str(data["app_id"]),
            started_at=str(data["started_at"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def live_owner(db_path: Path | str) -> Owner | None:
    """The app that owns the database now, or None: no owner file, a stale one, or one that is
    not trusted (a warning on stderr says why)."""
    path = owner_path(db_path)
    if not os.path.lexists(path):  # the common case, one stat
        return None
    owner, distrust = trusted_owner(path)
    if distrust is not None:
        print(
            f"warning: ignoring the owner file {path}: {distrust}; the command runs on the "
            "database file itself",
            file=sys.stderr,
        )
        return None
    if owner is None or not _pid_alive(owner.pid):
        return None
    return owner if answering_app_id(owner.url) == owner.app_id else None


def trusted_owner(path: Path) -> tuple[Owner | None, str | None]:
    """The owner file at ``path`` and None, or None and why it is not trusted (None and None:
    it went away meanwhile). It is opened without following a link and without waiting on a
    pipe, and the checks are made on what was opened: nothing can be swapped in between."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "it is a symbolic link (the app writes a plain file)"
        return None, f"it cannot be read ({exc.strerror})"
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        distrust = untrusted_because(status)
        if distrust is not None:
            return None, distrust
        owner = _parse_owner(handle.read(OWNER_FILE_MAX_BYTES))
    if owner is None:
        return None, "it does not hold an app's url, pid, credential, app_id and started_at"
    if not is_loopback_url(owner.url):
        return None, (
            f"its url {owner.url[:200]!r} is not on this machine (a loopback address: "
            "127.0.0.0/8, ::1 or localhost); use --url and --token for an app elsewhere"
        )
    return owner, None


def untrusted_because(status: os.stat_result) -> str | None:
    """Why an owner file of this ``status`` could have been written by someone else; None: it
    could not (a plain file of this user, mode 0600 or stricter)."""
    if not stat.S_ISREG(status.st_mode):
        return "it is not a plain file"
    if status.st_uid != os.geteuid():
        return f"it belongs to uid {status.st_uid}, not to this user (uid {os.geteuid()})"
    mode = stat.S_IMODE(status.st_mode)
    if mode & 0o077:
        return f"its mode is {mode:04o}, not 0600 (others could have written it)"
    return None


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` is an http(s) URL of this machine: 127.0.0.0/8, ::1 or localhost."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return pid > 0


def answering_app_id(url: str) -> str | None:
    """The app id that the app at ``url`` sends on ``/healthz``; None when nothing answers."""
    # imported here: urllib.request (http.client, ssl, email) costs every command 0.02 s at start
    # and is needed only when an owner file names an app
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/healthz", timeout=HEALTH_TIMEOUT_SECONDS) as answer:
            return answer.headers.get(APP_ID_HEADER)
    except (OSError, urllib.error.URLError, ValueError):
        return None


def listening_socket(host: str, port: int) -> tuple[socket.socket, str]:
    """A socket bound to (host, port) and listening, and the URL a client on this machine
    reaches it at: the port actually bound (port 0 picks a free one), the loopback address for
    a wildcard host."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    bound_port = sock.getsockname()[1]
    reach = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    shown = f"[{reach}]" if ":" in reach else reach
    return sock, f"http://{shown}:{bound_port}"
