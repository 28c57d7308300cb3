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


def _printed(width: int, **kwargs) -> list[str]:
    @click.command()
    def show() -> None:
        echo_columns(
            ("pair", "category", "F_true", "BT_true", "noise"),
            [
                ("a -> b", "Math", "0.1000", "0.0200", "0.0010"),
                ("a -> c", "Knowledge", "0.0500", "0.0300", "0.0020"),
            ],
            right=frozenset({2, 3, 4}),
            keep=2,
            width=width,
            **kwargs,
        )

    return CliRunner().invoke(show).output.splitlines()


def test_a_table_wider_than_the_terminal_continues_in_panels_that_repeat_the_row_names():
    """Nothing is cut: every cell of every column is printed, the naming columns in each panel,
    and no line is wider than the terminal (a `map` line was 218 characters)."""
    assert (
        _printed(0)
        == _printed(200)
        == [  # no limit, or wide enough: one panel
            "pair    category   F_true  BT_true   noise",
            "a -> b  Math       0.1000   0.0200  0.0010",
            "a -> c  Knowledge  0.0500   0.0300  0.0020",
        ]
    )
    assert _printed(35) == [
        "pair    category   F_true  BT_true",
        "a -> b  Math       0.1000   0.0200",
        "a -> c  Knowledge  0.0500   0.0300",
        "",
        "(continued: column 5 of 5)",
        "pair    category    noise",
        "a -> b  Math       0.0010",
        "a -> c  Knowledge  0.0020",
    ]
    for width in range(20, 60):
        lines = _printed(width)
        assert max(map(len, lines)) <= max(width, 28), width  # 28: names + the widest column
        cells = " ".join(lines)
        for value in ("0.1000", "0.0200", "0.0010", "0.0500", "0.0300", "0.0020", "Knowledge"):
            assert value in cells, (width, value)
