"""docs/settings.md is written from the settings classes (issue 55, point 4): each table is a
class's fields with their defaults, types, limits and descriptions, rendered by docs/hooks.py
(``scripts/docs-settings`` writes them into the page; the site's build writes them again). A
changed default, limit or description fails here until the page is written again."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click
import pytest
from forgetmap.cli import main
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from tests.unit.test_docs_complete import _settings_classes

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _hooks():
    spec = importlib.util.spec_from_file_location("forgetmap_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def test_the_settings_page_is_the_codes():
    page = (DOCS / "settings.md").read_text()
    assert hooks.refresh_settings(page) == page, (
        "docs/settings.md differs from the settings classes: run scripts/docs-settings"
    )


def test_every_settings_class_has_its_table():
    page = (DOCS / "settings.md").read_text()
    tabled = {m["cls"] for m in hooks.SETTINGS_BLOCK.finditer(page)}
    defined = {f"{cls.__module__}.{cls.__qualname__}" for cls in _settings_classes()}
    assert tabled == defined


class Example(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EXAMPLE_")

    wait_seconds: float = Field(2.5, gt=0, le=60, description="how long to wait")
    cap: int = Field(4 << 30, ge=1, description="the most bytes")
    folders: tuple[Path, ...] = Field((), description="where to look")
    on: bool = Field(True, description="whether to")
    limit: int | None = Field(None, ge=1, description="rows at most")
    token: str = Field(
        "",
        validation_alias="OTHER_TOKEN",
        description="a token",
        json_schema_extra={"shown_default": "none (required)"},
    )


def test_a_table_says_each_fields_default_type_limits_and_description():
    assert hooks.settings_table(Example).splitlines()[2:] == [
        "| `EXAMPLE_WAIT_SECONDS` | 2.5 | number > 0, ≤ 60 | how long to wait |",
        "| `EXAMPLE_CAP` | 4,294,967,296 (4 GiB) | integer ≥ 1 | the most bytes |",
        "| `EXAMPLE_FOLDERS` | none | folders, `:`-separated | where to look |",
        "| `EXAMPLE_ON` | true | true or false | whether to |",
        "| `EXAMPLE_LIMIT` | none | integer ≥ 1 | rows at most |",
        "| `OTHER_TOKEN` | none (required) | text | a token |",
    ]


def test_a_field_without_a_description_is_refused():
    class Bare(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="BARE_")
        size: int = 3

    with pytest.raises(ValueError, match="Bare.size has no description"):
        hooks.settings_table(Bare)


def _envvars(command: click.Command) -> set[str]:
    names = {
        name
        for param in command.params
        for name in ([param.envvar] if isinstance(param.envvar, str) else param.envvar or [])
    }
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            names |= _envvars(sub)
    return names


@pytest.mark.parametrize("variable", sorted(_envvars(main)))
def test_every_variable_a_command_reads_is_on_the_settings_page(variable):
    assert f"`{variable}`" in (DOCS / "settings.md").read_text()
