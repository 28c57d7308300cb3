"""MkDocs hook: the CLI reference is rendered from the click commands at build time, so it can
never drift from what ``forgetmap --help`` prints.

A page holding the line ``<!-- forgetmap-cli-reference -->`` gets, in its place, one section per
command (groups first, then their commands, depth first) with the command's full help: usage,
description and options, exactly as click formats them.
"""

from __future__ import annotations

from collections.abc import Iterator

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


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    from forgetmap.cli import main  # the app is imported only for the page that needs it

    return markdown.replace(MARKER, render_reference(main))
