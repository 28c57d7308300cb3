"""The CLI's choice lists are the boundary's enums (click needs them before anything heavy is
imported, so they are written out there; this keeps them one set of values)."""

from __future__ import annotations

import click
from forgetmap.cli import main
from forgetmap.contract.jobs import Engine, Mode
from forgetmap.services.tokens import Role


def _choices(command: click.Command, option: str) -> list[str]:
    param = next(p for p in command.params if p.name == option)
    return list(param.type.choices)


def test_watch_engines_and_modes_are_the_boundarys():
    watch = main.commands["watch"]
    assert _choices(watch, "engine") == [e.value for e in Engine]
    assert _choices(watch, "mode") == [m.value for m in Mode]


def test_token_roles_are_the_roles():
    create = main.commands["token"].commands["create"]
    assert _choices(create, "role") == [r.value for r in Role]
