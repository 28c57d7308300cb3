"""Progress of long commands: a bar on a terminal, plain lines in logs.

``forgetmap import ... > import.log`` or ``forgetmap demo > demo.log`` should not stay silent for
minutes: when stderr is not a terminal, each stage prints a line when it starts, at every tenth of
its work (at most one line every few seconds) and when it ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Report = Callable[[str, int, int], None]
"""report(stage, done, total): ``total`` 0 when unknown."""

LOG_EVERY_SECONDS = 5.0


class LineProgress:
    """Plain progress lines on a stream (for logs)."""

    def __init__(self, label: str, stream=None, clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.started = clock()
        self._stage: str | None = None
        self._last_tenth = -1
        self._last_time = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        tenth = int(10 * done / total) if total else -1
        first = stage != self._stage
        last = bool(total) and done >= total
        if not (
            first
            or last
            or (tenth > self._last_tenth and now - self._last_time >= LOG_EVERY_SECONDS)
        ):
            return
        self._stage, self._last_tenth, self._last_time = stage, tenth, now
        amount = f"{done:,}/{total:,}" if total else f"{done:,}"
        print(
            f"{self.label}: {stage} {amount} ({now - self.started:.1f} s)",
            file=self.stream,
            flush=True,
        )


@contextmanager
def progress_reporter(label: str, stream=None) -> Iterator[Report]:
    """A report function: a rich bar when ``stream`` (default stderr) is a terminal, else
    ``LineProgress`` lines (rich is loaded only for the bar: a log costs no import of it)."""
    stream = stream if stream is not None else sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()):
        yield LineProgress(label, stream)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,}"),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=Console(file=stream), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def report(stage: str, done: int, total: int) -> None:
            bar.update(task, description=f"{stage} {label}", completed=done, total=total or None)

        yield report
