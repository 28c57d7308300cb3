"""A command line run by the app (``POST /api/cli``): what the CLI sends and what comes back.

The CLI forwards a command on a database that a running app owns (app.runtime.owner); the app
runs the very same click command against its own store and streams what it prints as it prints
it, then its exit code, which the CLI prints and exits with (docs/many-users.md). The answer is
JSON lines (``application/x-ndjson``): an :class:`OutputPiece` per write, in the order written,
then one :class:`CommandEnd`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import click
from pydantic import Field, TypeAdapter

from app.contract.base import Int, Strict

MAX_ARGUMENTS = 200
MAX_ARGUMENT_CHARS = 4096
MAX_TERMINAL_WIDTH = 10_000
OUTPUT_MEDIA_TYPE = "application/x-ndjson"


class Terminal(Strict):
    """The client's terminal, for output rendered as it would be there: whether its stdout is a
    terminal (rich tables in colour) and how wide the terminal is (rich tables' width)."""

    stdout_is_tty: bool
    width: Annotated[Int, Field(ge=1, le=MAX_TERMINAL_WIDTH)]


class CommandCall(Strict):
    """A command line after ``forgetmap [--db ...]``: its arguments, the folder the client runs
    in (relative paths in the arguments are the client's), and the client's terminal (without
    it: the output is rendered as for a file)."""

    argv: Annotated[
        list[Annotated[str, Field(max_length=MAX_ARGUMENT_CHARS)]],
        Field(min_length=1, max_length=MAX_ARGUMENTS),
    ]
    cwd: Annotated[str, Field(min_length=1, max_length=MAX_ARGUMENT_CHARS)]
    prog_name: Annotated[str, Field(min_length=1, max_length=100)] = "forgetmap"
    terminal: Terminal | None = None


class OutputPiece(Strict):
    """Text the command wrote to its stdout or stderr."""

    stream: Literal["stdout", "stderr"]
    text: str


class CommandEnd(Strict):
    """The command's exit code: the answer's last line."""

    exit_code: Int


answer_line = TypeAdapter(OutputPiece | CommandEnd)
"""One line of the answer, parsed: ``answer_line.validate_json(line)``."""


def command_named(
    commands: click.Group, argv: list[str]
) -> tuple[tuple[str, ...], click.Command | None]:
    """The command names at the start of ``argv`` (``("pair", "add")``) and the command they
    name; None for a name the group does not have (click answers its usage error)."""
    context = click.Context(commands)
    path: list[str] = []
    command: click.Command | None = commands
    for word in argv:
        if not isinstance(command, click.Group) or word.startswith("-"):
            break
        command = command.get_command(context, word)
        path.append(word)
        if command is None:
            break
    return tuple(path), command


def touches_files(command: click.Command) -> bool:
    """True when the command reads or writes files named on its command line (a path
    parameter): on a remote app those would be the app machine's files."""
    return any(isinstance(param.type, click.Path) for param in command.params)
