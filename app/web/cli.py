"""``POST /api/cli``: the app runs a forgetmap command line against its own store.

While the app owns the database no other process may open it, so the CLI forwards its command
here (app.runtime.owner, docs/many-users.md). The app runs the very same click command in a
worker thread: the command's ``store_of`` answers the app's open store, its relative paths are
the client's (``app.cli.common.ClientPath``), and what it prints goes to buffers of its own (the
other threads keep printing where they did). Output, exit code and one-line errors are those of
the local command by construction.

The command group comes from the CLI that started the app (``Door``): the app sits below the CLI
and imports nothing of it.
"""

from __future__ import annotations

import contextvars
import io
import sys
import threading
import traceback
from dataclasses import dataclass

import click
from fastapi import APIRouter, HTTPException, Request

from app.contract.cli import CommandCall, CommandOutcome, command_named, touches_files
from app.runtime.owner import APP_STORE_KEY, CLIENT_CWD_KEY, LOCAL_ONLY
from app.services.tokens import LOCAL_PRINCIPAL, Role, needs_role_message
from app.web import deps
from app.web.responses import errors

router = APIRouter(tags=["write"])


@dataclass(frozen=True)
class Door:
    """What lets the app run the command line: the ``forgetmap`` group, and the URL the app
    listens on (published in the owner file)."""

    commands: click.Group
    url: str


READ_COMMANDS = frozenset({"map", "pair list", "series list", "series show", "recover list"})
SUBMIT_COMMANDS = frozenset(
    {"import table", "import lm-eval", "import lighteval", "pair add", "series add", "model set"}
)
"""The role a forwarded command needs: read for these, submit for these writes, admin for every
other (tokens, exports, and any command not named here)."""


def needed_role(path: tuple[str, ...], command: click.Command | None) -> Role:
    if command is None or isinstance(command, click.Group):  # usage or help only
        return Role.read
    name = " ".join(path)
    if name in READ_COMMANDS:
        return Role.read
    return Role.submit if name in SUBMIT_COMMANDS else Role.admin


@router.post(
    "/api/cli",
    responses=errors(400, 401, 403, 404),
    summary="Run a forgetmap command line against the app's database",
)
def run_cli(call: CommandCall, request: Request) -> CommandOutcome:
    """Runs ``forgetmap ARGV`` (the part after ``--db``) in the app, as the CLI does when the app
    owns its database; answers what it printed and its exit code. The role needed is the
    command's: read for reads, submit for imports and pairs, admin for tokens and the rest;
    commands that name files run only for the app's local credential."""
    principal = deps.bearer_principal(request)
    if principal is None:
        raise HTTPException(401, "this endpoint needs a token: send 'Authorization: Bearer <token>'",
                            headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
    door: Door | None = request.app.state.door
    if door is None:
        raise HTTPException(404, "this app runs no command lines (start it with `forgetmap serve`)")
    path, command = command_named(door.commands, call.argv)
    if path and path[0] in LOCAL_ONLY:
        raise HTTPException(
            400, f"`forgetmap {path[0]}` does not run through the app; run it in a shell of its own"
        )
    role = needed_role(path, command)
    if not principal.may(role):
        raise HTTPException(403, needs_role_message(principal, role))
    if command is not None and touches_files(command) and principal != LOCAL_PRINCIPAL:
        raise HTTPException(400, f"`forgetmap {' '.join(path)}` names files, which the app reads "
                                 "and writes only for a command line on its own machine")  # fmt: skip
    return run_command_line(door.commands, call, deps.store(request))


_command_streams: contextvars.ContextVar[tuple[io.StringIO, io.StringIO] | None] = (
    contextvars.ContextVar("forgetmap_command_streams", default=None)
)


class _SelectedStream(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` for every thread: a thread that runs a command line
    writes to that command's buffer, every other one to the stream this replaced."""

    def __init__(self, replaced, index: int):
        self.replaced = replaced
        self.index = index

    def _target(self):
        buffers = _command_streams.get()
        return self.replaced if buffers is None else buffers[self.index]

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()

    @property
    def encoding(self) -> str:  # click and rich ask; the buffers hold text
        return getattr(self.replaced, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self.replaced, "errors", None) or "strict"


_install_lock = threading.Lock()


def _select_streams() -> None:
    """Put the selecting streams in place of sys.stdout and sys.stderr (once: again only if
    something replaced them since)."""
    with _install_lock:
        if not isinstance(sys.stdout, _SelectedStream):
            sys.stdout = _SelectedStream(sys.stdout, 0)
        if not isinstance(sys.stderr, _SelectedStream):
            sys.stderr = _SelectedStream(sys.stderr, 1)


def exit_code(code: object, stderr: io.StringIO) -> int:
    """What a process ending with ``sys.exit(code)`` exits with (a text is printed, exit 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


def run_command_line(commands: click.Group, call: CommandCall, store) -> CommandOutcome:
    """Run the command line as ``forgetmap`` would in its own process, against ``store``, with
    its output captured."""
    _select_streams()
    stdout, stderr = io.StringIO(), io.StringIO()

    def run() -> int:
        _command_streams.set((stdout, stderr))
        try:
            # --db names the app's own file, for a command that reads the path itself
            commands.main(args=["--db", str(store.path), *call.argv], prog_name=call.prog_name,
                          standalone_mode=True,
                          obj={APP_STORE_KEY: store, CLIENT_CWD_KEY: call.cwd})  # fmt: skip
        except SystemExit as done:
            return exit_code(done.code, stderr)
        except Exception:  # a command's bug: a traceback and exit 1, as in its own process
            stderr.write(traceback.format_exc())
            return 1
        return 0

    code = contextvars.copy_context().run(run)
    return CommandOutcome(stdout=stdout.getvalue(), stderr=stderr.getvalue(), exit_code=code)
