"""Commands through the app: while an app owns the database, the CLI's commands run in it.

Only one process may open a DuckDB file. When `forgetmap serve` (or `up`) runs on the ``--db``
database, it has published itself in the owner file beside it (forgetmap.runtime.owner); a command
that uses the database is then sent to that app (``POST /api/cli`` with the file's local
credential), which runs the very same command on its open store and answers its output and exit
code, printed here as they come and exited with. ``--url`` (or $FORGETMAP_URL) with a token
sends it to a remote app instead; an import into a remote app runs here and uploads its files
(``POST /api/imports``). A stale owner file is ignored: the command runs on the file as ever.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click
from forgetmap.cli.common import CliError

if TYPE_CHECKING:
    from forgetmap.contract.cli import CommandLine, Terminal

COMMAND_LINE = "forgetmap.command_line"
"""Where the root group keeps the command line from the subcommand on (``ctx.meta``)."""
REMOTE_APP = "forgetmap.remote_app"
"""Where an import that runs here for a remote app finds it (``ctx.obj``: an ``AppConnection``)."""

CONNECT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class AppConnection:
    """An app to send commands to, and the credential to send them with."""

    url: str
    credential: str
    remote: bool


def find_app(db: Path, url: str | None, token: str | None) -> AppConnection | None:
    """The app a command on ``db`` goes through: ``url`` when given (with its token), else the
    live owner of ``db``; None: the command opens the file itself."""
    if url:
        if not token:
            raise CliError(
                f"--url {url} needs a token: --token or $FORGETMAP_API_TOKEN with the role the "
                "command needs (read, submit or admin; `forgetmap token create NAME --role ROLE`)"
            )
        return AppConnection(url.rstrip("/"), token, remote=True)
    from forgetmap.runtime.owner import live_owner

    owner = live_owner(db)
    return AppConnection(owner.url, owner.credential, remote=False) if owner is not None else None


FETCHED = frozenset({("series", "export")})
"""Commands that run here whenever an app owns the database (or with --url): they fetch what they
read from the app over HTTP with the app's credential (found at ``APP_CONNECTION``) and write to
this machine, with the user's own tracker login and files, instead of being forwarded."""
APP_CONNECTION = "forgetmap.app_connection"

UPLOADED = frozenset(
    {
        ("import", "table"),
        ("import", "lm-eval"),
        ("import", "lighteval"),
        ("import", "inspect"),
        ("import", "eee"),
    }
)
"""Commands that, through a remote app, run here and send the files they name to it
(``POST /api/imports``) instead of being forwarded (``imports.upload_to_app``)."""

DOWNLOADED = frozenset({("import", "hub")})
"""Commands that run here whenever an app owns the database (or with --url): they download with
this machine's Hugging Face token and cache, which the app (on another machine, or a service of
another user) may not have, then send the files to the app as uploads (``POST /api/imports``,
with ``REMOTE_APP`` set) instead of being forwarded."""


def command_line(ctx: click.Context, argv: list[str]) -> CommandLine:
    """The command click runs for ``argv`` (the words after the root's options), as the app
    resolves it: the client decides where a command runs from the same reading."""
    from forgetmap.contract.cli import resolve_command_line

    assert isinstance(ctx.command, click.Group)
    return resolve_command_line(ctx.command, argv)


def remote_way(ctx: click.Context, argv: list[str]) -> Literal["forward", "here"]:
    """How a command goes to a remote app (--url): "forward" (the app runs it) or "here" (it runs
    on this machine and sends its files to the app); a CliError for a command whose files the
    app cannot reach. The one place that decides what becomes of the files a command names
    when the app runs on another machine."""
    from forgetmap.contract.cli import touches_files

    line = command_line(ctx, argv)
    if line.path in UPLOADED:
        return "here"
    if line.command is not None and touches_files(line.command):
        raise CliError(
            f"`forgetmap {line.name}` reads or writes files on this machine, which a remote "
            "app (--url) cannot do: run it on the app's machine"
        )
    return "forward"


def reads_through_app(ctx: click.Context, argv: list[str]) -> bool:
    """Whether the command runs here and reads from the app (``FETCHED``)."""
    return command_line(ctx, argv).path in FETCHED


def downloads_here(ctx: click.Context, argv: list[str]) -> bool:
    """Whether the command downloads here and uploads to the app (``DOWNLOADED``)."""
    return command_line(ctx, argv).path in DOWNLOADED


def run_through_app(ctx: click.Context, url: str | None, token: str | None) -> None:
    """Send the command to the app that owns the database, print what it prints as it comes
    and exit with its exit code; return (to run it here) when no app owns it, for a command
    that never goes through one (``LOCAL_ONLY``, help), for an import into a remote app
    (it runs here with ``REMOTE_APP`` set: ``remote_way``), for a command that reads
    through the app (``FETCHED``: it runs here with ``APP_CONNECTION`` set), or for one that
    downloads here and uploads to the app (``DOWNLOADED``: ``REMOTE_APP`` set, any app)."""
    from forgetmap.runtime.owner import APP_STORE_KEY, LOCAL_ONLY

    argv = ctx.meta.get(COMMAND_LINE, [])
    if ctx.obj.get(APP_STORE_KEY) is not None or ctx.invoked_subcommand in LOCAL_ONLY:
        return  # the app runs this command, or it is not the database's
    if "--help" in argv:
        return
    app = find_app(ctx.obj["db"], url, token)
    if app is None:
        return
    if reads_through_app(ctx, argv):
        ctx.obj[APP_CONNECTION] = app
        return
    if downloads_here(ctx, argv):
        ctx.obj[REMOTE_APP] = app
        return
    if app.remote and remote_way(ctx, argv) == "here":
        ctx.obj[REMOTE_APP] = app
        return
    ctx.exit(forward(app, argv, ctx.find_root().info_name or "forgetmap"))


def terminal() -> Terminal:
    """This process's terminal as rich sees it: whether stdout is one, and its width (of the
    first of stdin, stdout, stderr that is a terminal, $COLUMNS first; 80 when none is)."""
    from forgetmap.contract.cli import MAX_TERMINAL_WIDTH, Terminal

    width = 80
    for descriptor in (0, 1, 2):
        try:
            width = os.get_terminal_size(descriptor).columns or width
            break
        except OSError:
            continue
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        width = int(columns)
    is_tty = getattr(sys.stdout, "isatty", None)
    return Terminal(stdout_is_tty=bool(is_tty and is_tty()), width=min(width, MAX_TERMINAL_WIDTH))


def forward(app: AppConnection, argv: list[str], prog_name: str) -> int:
    """``POST /api/cli``: the app runs the command; what it prints is printed here as it comes
    (an import's progress as it goes), its exit code returned. No time limit once connected:
    an import runs as long as it takes."""
    import httpx
    from forgetmap.contract.cli import CommandCall, CommandEnd, answer_line

    call = CommandCall(argv=argv, cwd=os.getcwd(), prog_name=prog_name, terminal=terminal())
    started = False
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_SECONDS)) as http,
            http.stream(
                "POST",
                app.url + "/api/cli",
                json=call.model_dump(),
                headers={"Authorization": f"Bearer {app.credential}"},
            ) as answer,
        ):
            if answer.status_code != 200:
                answer.read()
                raise CliError(
                    f"the app at {app.url} refused the command ({answer.status_code}): "
                    f"{_detail(answer)}"
                )
            started = True
            for line in answer.iter_lines():
                piece = answer_line.validate_json(line)
                if isinstance(piece, CommandEnd):
                    return piece.exit_code
                click.echo(piece.text, nl=False, err=piece.stream == "stderr")
    except httpx.TransportError as exc:
        if not started:
            raise CliError(f"cannot reach the app at {app.url}: {exc}") from None
    raise CliError(
        f"the connection to the app at {app.url} ended before the command did: it finished "
        "there, or it ended with the app and wrote nothing"
    )


def _detail(answer) -> str:
    from forgetmap.contract.errors import reply_detail

    return reply_detail(answer) or answer.text[:200]
