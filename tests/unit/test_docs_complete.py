"""README names every CLI command and every HTTP route (as datasette keeps its docs honest): a
command or route added without a line in README fails here."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import click
import pytest

from app.cli import main
from app.runtime.config import WebSettings
from app.services.queue import BrokerSettings
from app.web import create_app

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _commands(command: click.Command, prefix: tuple[str, ...] = ()) -> list[str]:
    if isinstance(command, click.Group):
        return [
            c for name, sub in command.commands.items() for c in _commands(sub, (*prefix, name))
        ]
    return [" ".join(prefix)]


def _routes() -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as folder:  # collection time: no tmp_path fixture yet
        app = create_app(
            Path(folder) / "routes.duckdb",
            broker=BrokerSettings(url="redis://127.0.0.1:1/0"),  # nothing is sent
            settings=WebSettings(secret_key="k" * 40),
        )
    return [
        (method, route.path)
        for route in app.routes
        for method in sorted(set(getattr(route, "methods", None) or ()) - {"HEAD"})
    ]


def _named(*words: str) -> bool:
    """The words occur in README in order, separated by blanks, as a whole (a path parameter may be
    named differently there: ``{id}`` for ``{pair_id}``)."""
    parts = [re.sub(r"\\\{[^}]*\\\}", r"\\{[^}]*\\}", re.escape(w)) for w in words]
    pattern = r"\s+".join(parts)
    return re.search(rf"(?<![\w/{{}}.-]){pattern}(?![\w/{{}}.-])", README) is not None


def test_the_cli_has_its_commands():
    assert {"map", "import table", "pair add", "serve", "token list"} <= set(_commands(main))


@pytest.mark.parametrize("command", _commands(main))
def test_readme_names_every_cli_command(command):
    assert _named("forgetmap", *command.split()), f"README.md does not name `forgetmap {command}`"


def test_the_app_has_its_routes():
    assert {("GET", "/api/map"), ("POST", "/api/jobs"), ("GET", "/")} <= set(_routes())


@pytest.mark.parametrize(("method", "path"), _routes())
def test_readme_names_every_route(method, path):
    assert _named(method, path), (
        f"README.md does not name `{method} {path}` (add it to the route list under 'HTTP API')"
    )
