"""A command line run by the app (``POST /api/cli``): what the CLI sends and what it gets back.

The CLI forwards a command on a database that a running app owns (app.runtime.owner); the app
runs the very same click command against its own store and answers what it printed and its exit
code, which the CLI prints and exits with (docs/many-users.md).
"""

from __future__ import annotations

from typing import Annotated

import click
from pydantic import Field

from app.contract.base import Int, Strict

MAX_ARGUMENTS = 200
MAX_ARGUMENT_CHARS = 4096


class CommandCall(Strict):
    """A command line after ``forgetmap [--db ...]``: its arguments, and the folder the client
    runs in (relative paths in the arguments are the client's)."""

    argv: Annotated[
        list[Annotated[str, Field(max_length=MAX_ARGUMENT_CHARS)]],
        Field(min_length=1, max_length=MAX_ARGUMENTS),
    ]
    cwd: Annotated[str, Field(min_length=1, max_length=MAX_ARGUMENT_CHARS)]
    prog_name: Annotated[str, Field(min_length=1, max_length=100)] = "forgetmap"


class CommandOutcome(Strict):
    """What the command printed, and its exit code."""

    stdout: str
    stderr: str
    exit_code: Int


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
