"""What every ``forgetmap`` command uses: consoles, the one-line error, the store, record output."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from importlib.abc import MetaPathFinder
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from forgetmap.db import Store

# Heavy modules (rich, SQLAlchemy, DuckDB, pyarrow, scipy) are imported by the commands that use
# them, so that `forgetmap --help` and quick commands start fast.


KEPT_OUT = ("pandas", "cloudpickle", "dateutil")
"""What pyarrow loads that the lean commands never use: pandas the first time it builds an array,
only to ask whether its input is a pandas object, trying again on later calls until the import
succeeds (0.2 s of every ``import``, ``pair`` and ``map`` command); cloudpickle as it loads, for
pickling none of them does (10-15 ms; pyarrow falls back to the standard pickle); dateutil (and
the ``six`` it loads) the first time it builds an array from a list, only to tell its
``relativedelta`` objects (none here) from other values (11 ms of an ``import``; pyarrow takes it
as absent when the import fails, as it does pandas)."""


class _ImportBlocker(MetaPathFinder):
    """Refuses to import the given packages (see ``block_unused_imports``)."""

    def __init__(self, names: tuple[str, ...]):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):  # noqa: ARG002 - importlib's signature
        if fullname.split(".")[0] in self.names:
            raise ImportError(f"{fullname} is kept out of this forgetmap command, which needs none")
        return None


def block_unused_imports() -> None:
    """Run this process as if the packages of ``KEPT_OUT`` were not installed (a setup pyarrow
    supports; bench/harness_import.py, `python -X importtime`).

    For a command's own process only (``run``): in a test process a later ``import pandas`` (by
    ``datasets``, say) would fail. One already loaded is left as it is.
    """
    absent = tuple(name for name in KEPT_OUT if name not in sys.modules)
    if absent and not any(isinstance(f, _ImportBlocker) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportBlocker(absent))


def unblock_imports() -> None:
    """Undo ``block_unused_imports``, for a command whose library needs one of ``KEPT_OUT``
    (inspect_ai loads dateutil)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _ImportBlocker)]


def lean_native_settings() -> None:
    """Native libraries' defaults for a short command in its own process, set before they load
    (a user's own settings of these variables win).

    - Arrow allocates from jemalloc from the start, in C++ as well (``use_jemalloc_pool`` switches
      only pyarrow's default, later): mimalloc's huge pages were zeroed afresh for its allocations.
    - OpenBLAS starts no thread pool: numpy loads it, and its idle threads spin for a while after
      start, on cores the command uses (none of these commands multiplies matrices).

    On the paper's layout an ``import`` took 0.15 s less (median of 6 alternating runs; ``perf``
    had put 2% of its CPU in mimalloc's page zeroing and 2% in OpenBLAS's spinning threads).
    """
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def Console(*args, **kwargs):  # noqa: N802 - stands in for rich's class
    """rich's console; for a command the app runs for a client, as wide as the client's
    terminal (rich would measure the app's)."""
    from forgetmap.runtime.owner import CLIENT_WIDTH_KEY
    from rich.console import Console as RichConsole

    context = click.get_current_context(silent=True)
    root = context.find_root().obj if context is not None else None
    if isinstance(root, dict) and CLIENT_WIDTH_KEY in root:
        kwargs.setdefault("width", root[CLIENT_WIDTH_KEY])
    return RichConsole(*args, **kwargs)


def Table(*args, **kwargs):  # noqa: N802 - stands in for rich's class
    from rich.table import Table as RichTable

    return RichTable(*args, **kwargs)


def output_width() -> int:
    """How wide a line of a table may be: the client's terminal, for a command the app runs for one
    (forgetmap.cli.through_app measures it), else ``$COLUMNS``, else this terminal's width, else 80
    (output to a file or a pipe)."""
    import shutil

    from forgetmap.runtime.owner import CLIENT_WIDTH_KEY

    context = click.get_current_context(silent=True)
    root = context.find_root().obj if context is not None else None
    if isinstance(root, dict) and root.get(CLIENT_WIDTH_KEY):
        return int(root[CLIENT_WIDTH_KEY])
    return shutil.get_terminal_size().columns


def echo_columns(
    headers: tuple[str, ...],
    rows: list[tuple[str, ...]],
    *,
    right: frozenset[int] = frozenset(),
    sep: str = "  ",
    breaks: frozenset[int] = frozenset(),
    keep: int = 1,
    width: int | None = None,
) -> None:
    """A plain text table on stdout: a header line, then one line per row, each column padded to
    its widest cell and joined by ``sep``; the columns numbered in ``right`` are right-aligned
    (counts), and an empty line follows each row numbered in ``breaks`` (a section's end). Cells
    are printed whole, as they are (no markup: a name may hold brackets). rich took 0.2 s for the
    pairing report's 94 rows, a fifth of `pair add`, and 50 ms of a small `map` to load.

    A table wider than ``width`` (default: :func:`output_width`, the terminal's; 0: no limit) is
    printed in panels, one after another, each as wide as fits: the first ``keep`` columns (what
    names a row) begin every panel, the others follow in order, and every cell stays whole."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    if width is None:
        width = output_width()
    panels = _panels(widths, keep, len(sep), width)

    def line(cells, columns) -> str:
        return sep.join(
            cells[i].rjust(widths[i]) if i in right else cells[i].ljust(widths[i]) for i in columns
        ).rstrip()

    lines: list[str] = []
    for number, columns in enumerate(panels):
        if number:
            first, last = columns[min(keep, len(columns) - 1)] + 1, columns[-1] + 1
            more = f"column {first}" if first == last else f"columns {first}-{last}"
            lines += ["", f"(continued: {more} of {len(headers)})"]
        lines.append(line(headers, columns))
        for row_number, row in enumerate(rows):
            lines.append(line(row, columns))
            if row_number in breaks and row_number != len(rows) - 1:
                lines.append("")
    click.echo("\n".join(lines))


def _panels(widths: list[int], keep: int, sep: int, width: int) -> list[list[int]]:
    """The columns of each panel of a table: all in one where it fits in ``width`` (or ``width``
    is 0), else the first ``keep`` in each and the rest, in order, as many as fit (at least
    one a panel, however wide)."""
    every = list(range(len(widths)))
    if not width or sum(widths) + sep * (len(widths) - 1) <= width:
        return [every]
    keep = min(keep, len(widths) - 1)
    head = every[:keep]
    used = sum(widths[i] + sep for i in head)
    panels: list[list[int]] = []
    current: list[int] = []
    for i in every[keep:]:
        if current and used + sum(widths[j] + sep for j in current) + widths[i] > width:
            panels.append(head + current)
            current = []
        current.append(i)
    panels.append(head + current)
    return panels


class CliError(click.ClickException):
    """A one-line error for the user; exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:  # noqa: ARG002 - click's signature
        click.echo(f"error: {self.message}", err=True)


def store_of(ctx: click.Context) -> Store:
    """The command's store: the file opened (the command closes it when done), or, for a
    command the app runs (forgetmap.web.cli), the app's own open store, lent."""
    from forgetmap.db import StoreError, open_store
    from forgetmap.runtime.owner import APP_STORE_KEY

    lent = ctx.obj.get(APP_STORE_KEY)
    if lent is not None:
        return LentStore(lent)  # type: ignore[return-value]
    path = ctx.obj["db"]
    try:
        return open_store(path)
    except StoreError as exc:
        raise CliError(str(exc)) from exc


class LentStore:
    """The app's store as a command that runs inside the app sees it: the same in every way
    but ``close()``, which leaves it open for the app."""

    def __init__(self, store: Store):
        self._store = store

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def close(self) -> None:
        pass


class ClientPath(click.Path):
    """A file or folder named on the command line, relative to the folder the command was typed
    in: made absolute against it, also when the app runs the command for a client elsewhere
    (the client's folder comes with the command)."""

    def convert(self, value, param, ctx):
        from forgetmap.runtime.owner import CLIENT_CWD_KEY

        root = ctx.find_root().obj if ctx is not None else None
        cwd = root.get(CLIENT_CWD_KEY) if isinstance(root, dict) else None
        text = os.fspath(value)
        if text and not os.path.isabs(text):
            value = os.path.join(cwd or os.getcwd(), text)
        return super().convert(value, param, ctx)


def format_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def echo_records(records: list[dict], fields, fmt: str) -> None:
    """Records as a JSON list, or as CSV with the given columns (None as an empty cell)."""
    if fmt == "json":
        click.echo(json.dumps(records, indent=1))
        return
    from forgetmap.core.spreadsheet_cells import inert_value

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    for r in records:  # text a spreadsheet would run as a formula is quoted (spreadsheet_cells)
        writer.writerow({k: "" if r[k] is None else inert_value(r[k]) for k in fields})
    click.echo(buf.getvalue(), nl=False)


def plus_minus(mean: float, std: float | None) -> str:
    return f"{mean:.4f}" if std is None else f"{mean:.4f} ± {std:.4f}"
