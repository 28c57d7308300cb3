"""echo_columns: the plain text tables of the CLI (the pairing report of `pair add`)."""

from __future__ import annotations

import click
from click.testing import CliRunner
from forgetmap.cli.common import echo_columns


def test_columns_are_padded_counts_right_aligned_and_cells_printed_as_they_are():
    @click.command()
    def show() -> None:
        echo_columns(
            ("benchmark", "paired", "rule"),
            [("[red]mmlu[/red]", "6,000", "question key"), ("a", "12", "id")],
            right=frozenset({1}),
        )

    out = CliRunner().invoke(show).output.splitlines()
    assert out == [
        "benchmark        paired  rule",
        "[red]mmlu[/red]   6,000  question key",
        "a                    12  id",
    ]
