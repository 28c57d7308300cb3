"""A command line run by the app (``POST /api/cli``): what the CLI sends and what comes back.

The CLI forwards a command on a database that a running app owns (forgetmap.runtime.owner); the app
runs the very same click command against its own store and streams what it prints as it prints
it, then its exit code, which the CLI prints and exits with (docs/many-users.md). The answer is
JSON lines (``application/x-ndjson``): an :class:`OutputPiece` per write, in the order written,
then one :class:`CommandEnd`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import click
from click.core import ParameterSource
from forgetmap.contract.base import Int, Strict
from pydantic import Field, TypeAdapter

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


@dataclass(frozen=True)
class CommandLine:
    """What click runs for ``forgetmap ARGV``: the command names it resolves (``("token",
    "create")``), the command they name (a group when the line names no subcommand: click then
    prints its usage; None for a name click does not know: a usage error) and the words that
    command parses."""

    path: tuple[str, ...]
    command: click.Command | None
    args: tuple[str, ...]

    @property
    def runs_command(self) -> bool:
        """True when click would run a command (not print a group's usage or a usage error)."""
        return self.command is not None and not isinstance(self.command, click.Group)

    @property
    def name(self) -> str:
        return " ".join(self.path)

    def canonical_argv(self) -> list[str]:
        """The command line spelled with its command names first, then the command's own
        words: click resolves it to the same command by construction (names are matched
        exactly, and a group stops parsing at the first name)."""
        return [*self.path, *self.args]


class RootOptionsGiven(ValueError):
    """A forwarded command line that sets options of ``forgetmap`` itself (``--db``, ``--url``,
    ``--token``): those belong to the client's side, never to the command the app runs."""


def resolve_command_line(commands: click.Group, argv: list[str]) -> CommandLine:
    """The command that click runs for ``argv`` (the words after ``forgetmap``), found with
    click's own parser, group by group, exactly as ``Group.invoke`` does: ``--`` and options
    before a subcommand's name are read as click reads them, so ``token -- create`` is
    ``token create``. Raises RootOptionsGiven when ``argv`` sets one of the root's options."""
    context = commands.make_context(
        commands.name or "forgetmap", list(argv), resilient_parsing=True
    )
    given = [
        param.opts[0]
        for param in commands.params
        if param.name != "help"
        and context.get_parameter_source(param.name or "") == ParameterSource.COMMANDLINE
    ]
    if given:
        raise RootOptionsGiven(
            f"{', '.join(given)} set(s) where the command runs, not in the command line sent "
            "to it: give them before the command on the client's side"
        )
    path: list[str] = []
    command: click.Command | None = commands
    while isinstance(command, click.Group):
        words = [*context._protected_args, *context.args]  # what Group.invoke resolves
        if not words or _eager_option_given(command, context):
            return CommandLine(tuple(path), command, ())  # usage, or the group's --help
        name, command, rest = command.resolve_command(context, words)
        if command is None or name is None:
            return CommandLine((*path, words[0]), None, tuple(rest))
        path.append(name)
        if not isinstance(command, click.Group):
            return CommandLine(tuple(path), command, tuple(rest))
        context = command.make_context(name, list(rest), parent=context, resilient_parsing=True)
    return CommandLine(tuple(path), command, ())


def _eager_option_given(group: click.Group, context: click.Context) -> bool:
    """True when the line gives one of the group's eager options (``--help``): click answers it
    and runs no subcommand (a resilient parse does not call it, so it is asked here)."""
    return any(
        param.is_eager
        and context.get_parameter_source(param.name or "") == ParameterSource.COMMANDLINE
        for param in group.get_params(context)
    )


def touches_files(command: click.Command) -> bool:
    """True when the command reads or writes files named on its command line (a path
    parameter): on a remote app those would be the app machine's files."""
    return any(isinstance(param.type, (click.Path, click.File)) for param in command.params)
