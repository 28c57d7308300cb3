"""The command the app checks is the command click runs (hands the line's words to):
``resolve_command_line`` against click itself, over every leaf command of the CLI and the spellings
that once let ``token -- create`` pass as the ``token`` group (issue 50, row 1).

What click runs is seen by running the line for real on a mirror of the CLI: the same groups
with the same options, each leaf replaced by a command that records its path and accepts any
words (which leaf click picks is decided by the groups, never by the leaf's own options)."""

from __future__ import annotations

import click
import pytest
from forgetmap.cli import main
from forgetmap.contract.cli import RootOptionsGiven, resolve_command_line
from forgetmap.runtime.owner import LOCAL_ONLY
from forgetmap.web.cli import COMMAND_ROLES, needed_role


def leaves(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    context = click.Context(group)
    found = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            found += leaves(command, (*path, name))
        else:
            found.append((*path, name))
    return found


LEAVES = leaves(main)


def mirror(command: click.Command, ran: list, path: tuple[str, ...] = ()) -> click.Command:
    if isinstance(command, click.Group):
        context = click.Context(command)
        return type(command)(
            name=command.name,
            params=list(command.params),
            commands={
                name: mirror(command.get_command(context, name), ran, (*path, name))
                for name in command.list_commands(context)
            },
        )
    return _Recorded(
        ran,
        path,
        name=command.name,
        params=[click.Argument(["words"], nargs=-1)],
        context_settings={"ignore_unknown_options": True},
    )


class _Recorded(click.Command):
    """A leaf that records its path when click hands it the line's remaining words (its own
    ``--help`` included: the help shown is that command's, so it needs that command's role)."""

    def __init__(self, ran: list, path: tuple[str, ...], **kwargs):
        super().__init__(**kwargs)
        self.ran, self.path = ran, path

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        self.ran.append(self.path)
        return super().parse_args(ctx, args)


def spellings(path: tuple[str, ...]) -> list[list[str]]:
    """The leaf as typed, and with ``--`` and options placed wherever click lets them go."""
    lines = [
        [*path, "evil"],
        ["--", *path, "evil"],
        [*path, "--", "evil", "--role", "admin"],
        [*path, "--help"],
    ]
    if len(path) == 2:
        group, leaf = path
        lines += [
            [group, "--", leaf, "evil", "--role", "admin"],
            [group, "--", leaf, "--", "evil"],
            ["--", group, "--", leaf],
            [group, "--help", leaf, "evil"],
            [group],
        ]
    return lines


def leaf_click_runs(argv: list[str]) -> tuple[str, ...] | None:
    ran: list[tuple[str, ...]] = []
    try:
        mirror(main, ran).main(args=["--db", "x.duckdb", *argv], standalone_mode=False)
    except (click.exceptions.ClickException, click.exceptions.Exit):
        pass
    return ran[0] if ran else None


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_the_resolved_command_is_the_one_click_runs(path):
    for argv in spellings(path):
        line = resolve_command_line(main, argv)
        runs = leaf_click_runs(argv)
        assert (line.path if line.runs_command else None) == runs, argv
        if line.runs_command:  # the app runs the canonical spelling: the same command
            assert leaf_click_runs(line.canonical_argv()) == runs, argv


def test_the_attack_as_written_is_token_create():
    line = resolve_command_line(main, ["token", "--", "create", "evil", "--role", "admin"])
    assert line.path == ("token", "create") and line.runs_command
    assert line.canonical_argv() == ["token", "create", "evil", "--role", "admin"]


def test_every_command_the_app_may_run_has_its_role_in_the_table():
    through_app = {" ".join(path) for path in LEAVES if path[0] not in LOCAL_ONLY}
    assert set(COMMAND_ROLES) == through_app


@pytest.mark.parametrize("path", [p for p in LEAVES if p[0] not in LOCAL_ONLY], ids=" ".join)
def test_the_role_needed_is_the_leafs_whatever_the_spelling(path):
    role = COMMAND_ROLES[" ".join(path)]
    for argv in spellings(path):
        line = resolve_command_line(main, argv)
        if line.runs_command:
            assert needed_role(line) == role, argv


@pytest.mark.parametrize(
    "argv",
    [["--db", "/etc/other.duckdb", "map"], ["--url", "http://x", "map"], ["--token=t", "map"]],
)
def test_options_of_forgetmap_itself_are_refused(argv):
    with pytest.raises(RootOptionsGiven, match=argv[0].split("=")[0]):
        resolve_command_line(main, argv)
