"""MkDocs hook: the pages that describe code are rendered from it, so they cannot drift.

- The CLI reference: a page holding the line ``<!-- forgetmap-cli-reference -->`` gets, in its
  place, one section per command (groups first, then their commands, depth first) with the
  command's full help: usage, description and options, exactly as click formats them.
- The settings tables: between ``<!-- settings: module.Class -->`` and ``<!-- end settings -->``,
  a row per field of that pydantic-settings class: its variable, default, type and limits, and
  what it does (the field's own ``description``). These are written into docs/settings.md itself
  (``scripts/docs-settings``), so the page reads the same on GitHub; the build writes them again,
  and tests/unit/test_settings_docs.py fails when the file and the code differ.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import annotated_types
import click

MARKER = "<!-- forgetmap-cli-reference -->"
# a fixed width: the page must not depend on the terminal that builds it
HELP_WIDTH = 100


def command_contexts(
    command: click.Command, name: str = "forgetmap", parent: click.Context | None = None
) -> Iterator[click.Context]:
    """A context for ``command`` and for every command under it, depth first, hidden ones left
    out (they are not part of the interface)."""
    if command.hidden:
        return
    context = click.Context(
        command,
        info_name=name,
        parent=parent,
        terminal_width=HELP_WIDTH,
        max_content_width=HELP_WIDTH,
    )
    yield context
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(context):
            sub = command.get_command(context, sub_name)
            if sub is not None:
                yield from command_contexts(sub, sub_name, context)


def render_reference(root: click.Command) -> str:
    """Markdown: a heading per command (``forgetmap pair add``) and its help as a text block."""
    sections = []
    for context in command_contexts(root):
        depth = min(2 + context.command_path.count(" "), 4)
        help_text = context.command.get_help(context)
        sections.append(f"{'#' * depth} `{context.command_path}`\n\n```text\n{help_text}\n```\n")
    return "\n".join(sections)


SETTINGS_BLOCK = re.compile(
    r"(?P<open><!-- settings: (?P<cls>[\w.]+) -->\n).*?(?P<close><!-- end settings -->)", re.S
)
SETTINGS_PAGE = Path(__file__).resolve().parent / "settings.md"
LIMITS = (
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.Le, "le", "≤"),
)


def _settings_class(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10_000 else f"{value:g}"


def shown_default(field: Any) -> str:
    """The default as the page says it: the field's ``shown_default``, else its value."""
    extra = field.json_schema_extra or {}
    if "shown_default" in extra:
        return extra["shown_default"]
    value = field.default
    if isinstance(value, bool):
        return str(value).lower()
    if value is None or value == ():
        return "none"
    if isinstance(value, int) and value >= 1 << 20 and value % (1 << 30) == 0:
        return f"{value:,} ({value >> 30} GiB)"
    if isinstance(value, int | float):
        return _number(value)
    return f"`{value}`"


def shown_type(field: Any) -> str:
    """The value a field takes, in words, with its limits
    (``gt=0, le=3600``: "number > 0, ≤ 3600")."""
    annotation = field.annotation
    optional = type(None) in get_args(annotation)
    if optional:
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    words = {bool: "true or false", int: "integer", float: "number", str: "text", Path: "folder"}
    if get_args(annotation) and get_args(annotation)[0] is Path:
        kind = "folders, `:`-separated"
    else:
        kind = words[annotation]
    limits = [
        f"{sign} {_number(getattr(limit, attribute))}"
        for limit in field.metadata
        for kind_of, attribute, sign in LIMITS
        if isinstance(limit, kind_of)
    ]
    return ", ".join([f"{kind} {limits[0]}" if limits else kind, *limits[1:]])


def settings_table(cls: Any) -> str:
    """A Markdown table of a pydantic-settings class: a row per field, in the class's order. A
    field that is itself a settings class (the worker's broker) is that class's table."""
    from forgetmap.runtime.config import setting_variable
    from pydantic_settings import BaseSettings

    rows = ["| variable | default | type | what it does |", "|---|---|---|---|"]
    for name, field in cls.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseSettings):
            continue
        if not field.description:
            raise ValueError(f"{cls.__name__}.{name} has no description for docs/settings.md")
        variable = setting_variable(cls, name)
        rows.append(
            f"| `{variable}` | {shown_default(field)} | {shown_type(field)} | {field.description} |"
        )
    return "\n".join(rows) + "\n"


def refresh_settings(markdown: str) -> str:
    """``markdown`` with each settings block rendered afresh from its class."""
    return SETTINGS_BLOCK.sub(
        lambda m: m["open"] + settings_table(_settings_class(m["cls"])) + m["close"], markdown
    )


def on_page_markdown(markdown: str, page, config, files) -> str:
    if SETTINGS_BLOCK.search(markdown):
        markdown = refresh_settings(markdown)
    if MARKER not in markdown:
        return markdown
    from forgetmap.cli import main  # the app is imported only for the page that needs it

    return markdown.replace(MARKER, render_reference(main))
