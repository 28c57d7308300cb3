"""Commands through the app: while an app owns the database, the CLI's commands run in it.

Only one process may open a DuckDB file. When `forgetmap serve` (or `up`) runs on the ``--db``
database, it has published itself in the owner file beside it (app.runtime.owner); a command
that uses the database is then sent to that app (``POST /api/cli`` with the file's local
credential), which runs the very same command on its open store and answers its output and exit
code, printed and exited with here. ``--url`` (or $FORGETMAP_APP_URL) with a token sends it to
a remote app instead. A stale owner file is ignored: the command runs on the file as ever.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import click

from app.cli.common import CliError

COMMAND_LINE = "forgetmap.command_line"
"""Where the root group keeps the command line from the subcommand on (``ctx.meta``)."""

CONNECT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class AppDoor:
    """An app to send commands to, and the credential to send them with."""

    url: str
    credential: str
    remote: bool


def find_door(db: Path, url: str | None, token: str | None) -> AppDoor | None:
    """The app a command on ``db`` goes through: ``url`` when given (with its token), else the
    live owner of ``db``; None: the command opens the file itself."""
    if url:
        if not token:
            raise CliError(
                f"--url {url} needs a token: --token or $FORGETMAP_API_TOKEN with the role the "
                "command needs (read, submit or admin; `forgetmap token create NAME --role ROLE`)"
            )
        return AppDoor(url.rstrip("/"), token, remote=True)
    from app.runtime.owner import live_owner

    owner = live_owner(db)
    return AppDoor(owner.url, owner.credential, remote=False) if owner is not None else None


def remote_refusal(ctx: click.Context, argv: list[str]) -> str | None:
    """Why the command cannot be sent to a remote app, or None: the one place that decides what
    becomes of the files a command names when the app runs on another machine (for now: refused;
    they are this machine's files, not the app's)."""
    from app.contract.cli import command_named, touches_files

    names, command = command_named(ctx.command, argv)
    if command is not None and touches_files(command):
        return (
            f"`forgetmap {' '.join(names)}` reads or writes files on this machine, which a remote "
            "app (--url) cannot do yet: run it on the app's machine"
        )
    return None


def run_through_app(ctx: click.Context, url: str | None, token: str | None) -> None:
    """Send the command to the app that owns the database, print what it printed and exit with
    its exit code; return (to run it here) when no app owns it, or for a command that never
    goes through one (``LOCAL_ONLY``, help)."""
    from app.runtime.owner import APP_STORE_KEY, LOCAL_ONLY

    argv = ctx.meta.get(COMMAND_LINE, [])
    if ctx.obj.get(APP_STORE_KEY) is not None or ctx.invoked_subcommand in LOCAL_ONLY:
        return  # the app runs this command, or it is not the database's
    if "--help" in argv:
        return
    door = find_door(ctx.obj["db"], url, token)
    if door is None:
        return
    if door.remote:
        refusal = remote_refusal(ctx, argv)
        if refusal is not None:
            raise CliError(refusal)
    ctx.exit(forward(door, argv, ctx.find_root().info_name or "forgetmap"))


def forward(door: AppDoor, argv: list[str], prog_name: str) -> int:
    """``POST /api/cli``: the app runs the command; its output is printed here, its exit code
    returned. No time limit once connected: an import runs as long as it takes."""
    import httpx

    from app.contract.cli import CommandCall, CommandOutcome

    call = CommandCall(argv=argv, cwd=os.getcwd(), prog_name=prog_name)
    try:
        with httpx.Client(timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_SECONDS)) as http:
            answer = http.post(
                door.url + "/api/cli",
                json=call.model_dump(),
                headers={"Authorization": f"Bearer {door.credential}"},
            )
    except httpx.TransportError as exc:
        raise CliError(f"cannot reach the app at {door.url}: {exc}") from None
    if answer.status_code != 200:
        raise CliError(
            f"the app at {door.url} refused the command ({answer.status_code}): {_detail(answer)}"
        )
    outcome = CommandOutcome.model_validate(answer.json())
    click.echo(outcome.stdout, nl=False)
    click.echo(outcome.stderr, nl=False, err=True)
    return outcome.exit_code


def _detail(answer) -> str:
    try:
        detail = answer.json().get("detail")
    except ValueError:
        detail = None
    return str(detail) if detail else answer.text[:200]
