"""Plain progress lines for logs (forgetmap.runtime.progress.LineProgress)."""

from __future__ import annotations

import io
import itertools

from forgetmap.runtime.progress import LineProgress


def test_lines_at_start_tenths_and_end():
    clock = itertools.count(0.0, 10.0)  # 10 s between calls
    out = io.StringIO()
    report = LineProgress("importing x", out, clock=lambda: next(clock))
    for done in range(0, 101):
        report("write", done, 100)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("importing x: write 0/100")
    assert lines[-1].startswith("importing x: write 100/100")
    assert len(lines) == 11  # the start, each tenth, the end (once)


def test_quiet_between_tenths_and_on_a_busy_clock():
    out = io.StringIO()
    report = LineProgress("demo", out, clock=lambda: 0.0)  # no time passes
    for done in range(1, 1001):
        report("train", done, 1000)
    assert len(out.getvalue().splitlines()) == 2  # first call and the end
