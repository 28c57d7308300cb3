"""``POST /api/cli``: the app runs a forgetmap command line against its own store.

While the app owns the database no other process may open it, so the CLI forwards its command
here (forgetmap.runtime.owner, docs/many-users.md). The app runs the very same click command in a
thread of its own: the command's ``store_of`` answers the app's open store, its relative paths
are the client's (``forgetmap.cli.common.ClientPath``), and what it prints goes to streams of its
own (the other threads keep printing where they did), sent to the client as it is written: an
import's progress arrives as it goes. Output, exit code and one-line errors are those of the
local command by construction; tables are rendered for the client's terminal (its width, and
colour when its stdout is one).

The command group comes from the CLI that started the app (``AppCommandLine``): the app sits below
the CLI and imports nothing of it.
"""

from __future__ import annotations

import contextvars
import io
import queue
import sys
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import click
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse
from forgetmap.contract.cli import (
    OUTPUT_MEDIA_TYPE,
    CommandCall,
    CommandEnd,
    CommandLine,
    OutputPiece,
    RootOptionsGiven,
    resolve_command_line,
    touches_files,
)
from forgetmap.runtime.owner import APP_STORE_KEY, CLIENT_CWD_KEY, CLIENT_WIDTH_KEY, LOCAL_ONLY
from forgetmap.services.tokens import LOCAL_PRINCIPAL, Principal, Role, needs_role_message
from forgetmap.web import deps
from forgetmap.web.responses import errors

router = APIRouter(tags=["write"])


@dataclass(frozen=True)
class AppCommandLine:
    """What lets the app run the command line: the ``forgetmap`` group, and the URL the app
    listens on (published in the owner file)."""

    commands: click.Group
    url: str


COMMAND_ROLES: dict[str, Role] = {
    # reads: every role may read
    "map": Role.read,
    "pair list": Role.read,
    "series list": Role.read,
    "series show": Role.read,
    "recover list": Role.read,
    "recover export": Role.read,
    "scores": Role.read,
    # writes of results, pairs, series and models
    "import table": Role.submit,
    "import lm-eval": Role.submit,
    "import lighteval": Role.submit,
    "import inspect": Role.submit,
    "import eee": Role.submit,
    "import hub": Role.submit,
    "pair add": Role.submit,
    "pair suggest": Role.submit,
    "series add": Role.submit,
    "model set": Role.submit,
    "model sizes": Role.submit,
    "rescore": Role.submit,
    # tokens, backups, exports to files and trackers
    "token create": Role.admin,
    "token list": Role.admin,
    "token revoke": Role.admin,
    "backup": Role.admin,
    "export eee": Role.admin,
    "series export": Role.admin,
}
"""The role each command needs when the app runs it for a token: the one table. A command that
is not here (a new one, until it is added) needs admin; the commands of ``LOCAL_ONLY`` never
run through the app. tests/unit/test_cli_roles_through_app.py walks every command of the CLI against
it."""

REMOTE_REFUSED = frozenset({"import hub"})
"""Commands that read the app machine's own files without naming them (the hub cache): run for
the app's local credential only, like every command with a path parameter (``touches_files``).
A client runs them on its machine and uploads what they read (forgetmap.cli.through_app)."""


def needed_role(line: CommandLine) -> Role:
    """The role ``line`` needs: its command's (``COMMAND_ROLES``, admin when missing); read
    when it runs no command (a group's usage, a usage error)."""
    if not line.runs_command:
        return Role.read
    return COMMAND_ROLES.get(line.name, Role.admin)


def may_run(principal: Principal, role: Role) -> bool:
    """Every role may read; the rest as ``Principal.may``."""
    return role == Role.read or principal.may(role)


def app_machine_only(line: CommandLine) -> bool:
    """True when the command reads or writes files of the machine the app runs on."""
    return line.command is not None and (touches_files(line.command) or line.name in REMOTE_REFUSED)


STREAMED_ANSWER: dict[int | str, dict[str, Any]]
STREAMED_ANSWER = {
    200: {
        "description": "JSON lines, sent as the command writes: "
        '{"stream": "stdout"|"stderr", "text": ...} for each piece of its '
        'output, then {"exit_code": N}',
        "content": {OUTPUT_MEDIA_TYPE: {"schema": {"type": "string"}}},
    }
}


@router.post(
    "/api/cli",
    response_class=StreamingResponse,
    responses={**STREAMED_ANSWER, **errors(400, 401, 403, 404)},
    summary="Run a forgetmap command line against the app's database",
)
def run_cli(call: CommandCall, request: Request) -> StreamingResponse:
    """Runs ``forgetmap ARGV`` (the part after ``--db``) in the app, as the CLI does when the app
    owns its database; streams what it prints as it prints it, then its exit code (JSON lines).
    The role needed is that of the command click resolves (``--`` and options before a
    subcommand included): every role reads, submit imports and adds pairs, series and models,
    admin manages tokens and the rest; commands that name files of the app's machine run only
    for the app's local credential. Options of ``forgetmap`` itself (``--db``, ``--url``,
    ``--token``) are refused (400)."""
    principal = deps.bearer_principal(request)
    if principal is None:
        raise HTTPException(
            401,
            "this endpoint needs a token: send 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    command_line: AppCommandLine | None = request.app.state.command_line
    if command_line is None:
        raise HTTPException(404, "this app runs no command lines (start it with `forgetmap serve`)")
    try:
        line = resolve_command_line(command_line.commands, call.argv)
    except RootOptionsGiven as exc:
        raise HTTPException(400, str(exc)) from None
    if line.path and line.path[0] in LOCAL_ONLY:
        raise HTTPException(
            400,
            f"`forgetmap {line.path[0]}` does not run through the app; "
            "run it in a shell of its own",
        )
    role = needed_role(line)
    if not may_run(principal, role):
        raise HTTPException(403, needs_role_message(principal, role))
    if app_machine_only(line) and principal != LOCAL_PRINCIPAL:
        raise HTTPException(
            400,
            f"`forgetmap {line.name}` reads or writes files of the app's "
            "machine, which it does only for a command line on that machine",
        )
    if line.runs_command:  # the command click resolved, spelled so that nothing else can run
        call = call.model_copy(update={"argv": line.canonical_argv()})
    lines = start_command_line(command_line.commands, call, deps.store(request))
    return StreamingResponse(lines, media_type=OUTPUT_MEDIA_TYPE)


_command_streams: contextvars.ContextVar[tuple[CommandStream, CommandStream] | None] = (
    contextvars.ContextVar("forgetmap_command_streams", default=None)
)


class CommandStream(io.TextIOBase):
    """One of a running command's two outputs: each write goes to the command's queue at once
    (what the answer streams), tagged with the stream's name; a terminal or not as the client's
    is."""

    def __init__(self, name: Literal["stdout", "stderr"], pieces: queue.SimpleQueue, is_tty: bool):
        self.name = name
        self.pieces = pieces
        self.is_tty = is_tty

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # a text stream, as click finds out by writing b""
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self.pieces.put(OutputPiece(stream=self.name, text=text))
        return len(text)

    def isatty(self) -> bool:
        return self.is_tty


class _SelectedStream(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` for every thread: a thread that runs a command line
    writes to that command's stream, every other one to the stream this replaced."""

    def __init__(self, replaced, index: int):
        self.replaced = replaced
        self.index = index

    def _target(self):
        streams = _command_streams.get()
        return self.replaced if streams is None else streams[self.index]

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()

    # typeshed declares TextIOBase's encoding and errors plain attributes; they are read-only
    # properties in io, as here
    @property
    def encoding(self) -> str:  # type: ignore[override]  # click and rich ask; streams hold text
        return getattr(self.replaced, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]  # as encoding
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


def exit_code(code: object, stderr: CommandStream) -> int:
    """What a process ending with ``sys.exit(code)`` exits with (a text is printed, exit 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


def start_command_line(commands: click.Group, call: CommandCall, store) -> Iterator[bytes]:
    """Start the command line on a thread of its own, as ``forgetmap`` would run it in its own
    process, against ``store``; answer the lines of its output as it writes it, then its exit
    code. The command runs to its end whether or not anyone reads (a client that hangs up does
    not cut an import short)."""
    _select_streams()
    pieces: queue.SimpleQueue = queue.SimpleQueue()
    # stderr is never a terminal here: a live progress bar redraws from a thread of rich's own,
    # which would write outside the command's stream; progress is told in lines instead
    stdout = CommandStream(
        "stdout", pieces, call.terminal is not None and call.terminal.stdout_is_tty
    )
    stderr = CommandStream("stderr", pieces, False)
    obj = {APP_STORE_KEY: store, CLIENT_CWD_KEY: call.cwd}
    if call.terminal is not None:
        obj[CLIENT_WIDTH_KEY] = call.terminal.width

    def run() -> int:
        _command_streams.set((stdout, stderr))
        try:
            # --db names the app's own file, for a command that reads the path itself
            commands.main(
                args=["--db", str(store.path), *call.argv],
                prog_name=call.prog_name,
                standalone_mode=True,
                obj=obj,
            )
        except SystemExit as done:
            return exit_code(done.code, stderr)
        except Exception:  # a command's bug: a traceback and exit 1, as in its own process
            stderr.write(traceback.format_exc())
            return 1
        return 0

    def run_and_end() -> None:
        code = 1
        try:
            code = contextvars.copy_context().run(run)
        finally:
            pieces.put(CommandEnd(exit_code=code))

    threading.Thread(target=run_and_end, name="forgetmap-command", daemon=True).start()
    return answer_lines(pieces)


def answer_lines(pieces: queue.SimpleQueue) -> Iterator[bytes]:
    """The queued output as JSON lines, each sent as soon as it is there: the pieces waiting at
    once are joined while they come from one stream (a table printed cell by cell is one line
    of the answer, not hundreds)."""
    while True:
        waiting = [pieces.get()]
        while not isinstance(waiting[-1], CommandEnd) and not pieces.empty():
            waiting.append(pieces.get())
        joined: list[OutputPiece | CommandEnd] = []
        for piece in waiting:
            last = joined[-1] if joined else None
            if (
                isinstance(piece, OutputPiece)
                and isinstance(last, OutputPiece)
                and last.stream == piece.stream
            ):
                joined[-1] = OutputPiece(stream=piece.stream, text=last.text + piece.text)
            else:
                joined.append(piece)
        yield b"".join(piece.model_dump_json().encode() + b"\n" for piece in joined)
        if isinstance(joined[-1], CommandEnd):
            return
