"""Page load: the map page in Chromium over loopback, first visit and revisit, bytes and ms.

    .venv/bin/python bench/page_load.py                    # this checkout, 5 rounds
    .venv/bin/python bench/page_load.py --before HEAD~3    # and a commit, alternating, same run

A real ``forgetmap serve`` (one per tree) over a database of one pair (``--benchmarks`` x
``--questions`` questions, made by that tree's own ``import table`` and ``pair add``). Each round
opens a fresh browser context (an empty cache), loads ``/`` and waits until the heatmap is drawn
(first visit), then opens ``/`` again in the same context (revisit: what its cache keeps).
Reported per visit, medians over rounds: the bytes that crossed the wire (the sum of the
Resource Timing ``transferSize`` of the page and its subresources: compressed bytes plus
headers; a file the cache served without asking counts 0) and the ms from navigation to the
heatmap drawn. ``--before REF`` serves a worktree of that commit too (its package imported
ahead of this checkout's editable install), the two alternating round by round, so that both
see the same machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.server import free_port  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
DRAWN = "document.querySelector('.js-plotly-plot .main-svg') !== null"
WIRE_BYTES = """() => {
  const entries = [...performance.getEntriesByType('navigation'),
                   ...performance.getEntriesByType('resource')];
  return entries.reduce((sum, e) => sum + e.transferSize, 0);
}"""


class Tree:
    """A source tree served by its own ``forgetmap``: this checkout, or a worktree of a commit
    whose ``app/`` is imported as ``forgetmap`` through a shim folder put first on sys.path."""

    def __init__(self, name: str, workdir: Path, source: Path | None) -> None:
        self.name = name
        self.workdir = workdir / name
        self.workdir.mkdir(parents=True)
        self.shim = None
        if source is not None:
            self.shim = self.workdir / "shim"
            self.shim.mkdir()
            (self.shim / "forgetmap").symlink_to(source / "app")

    def command(self, *args: str) -> list[str]:
        if self.shim is None:
            return [str(Path(sys.executable).parent / "forgetmap"), *args]
        boot = (
            f"import sys; sys.path.insert(0, {str(self.shim)!r}); "
            "sys.argv = ['forgetmap', *sys.argv[1:]]; from forgetmap.cli import run; run()"
        )
        return [sys.executable, "-c", boot, *args]

    def prepare(self, benchmarks: int, questions: int) -> Path:
        db = self.workdir / "page.duckdb"
        rows = self.workdir / "rows.csv"
        with rows.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["model", "benchmark", "sample_id", "correct", "num_choices"])
            for model, shift in (("base", 0), ("post", 1)):
                for b in range(benchmarks):
                    for q in range(questions):
                        out.writerow(
                            [model, f"bench{b:02d}", f"q{q}", int((q * 7 + b + shift) % 3 != 0), 4]
                        )
        for args in (("import", "table", str(rows)), ("pair", "add", "base", "post")):
            subprocess.run(self.command("--db", str(db), *args), check=True, capture_output=True)
        return db

    def serve(self, db: Path) -> tuple[subprocess.Popen, str]:
        port = free_port()
        log = (self.workdir / "serve.log").open("w")
        proc = subprocess.Popen(
            self.command("--db", str(db), "serve", "--port", str(port)),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        import urllib.request

        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1)
                return proc, url
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{self.name}: serve did not start") from None
                time.sleep(0.1)


def visit(context, url: str) -> tuple[int, float]:
    """(bytes over the wire, ms to the heatmap drawn) of one load of ``url``."""
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(url + "/")
    page.wait_for_function(DRAWN, timeout=60_000)
    ms = (time.perf_counter() - t0) * 1000
    page.wait_for_load_state("load")
    wire = int(page.evaluate(WIRE_BYTES))
    page.close()
    return wire, ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--before", metavar="REF", help="also serve this commit, alternating")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--benchmarks", type=int, default=12)
    ap.add_argument("--questions", type=int, default=200)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    workdir = Path(tempfile.mkdtemp(prefix="forgetmap-page-load-"))
    trees = [Tree("now", workdir, None)]
    worktree = None
    try:
        if args.before:
            worktree = workdir / "before-src"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), args.before],
                check=True,
                capture_output=True,
            )
            trees.insert(0, Tree("before", workdir, worktree))
        servers = {}
        for tree in trees:
            servers[tree.name] = tree.serve(tree.prepare(args.benchmarks, args.questions))
        results: dict[str, dict[str, list]] = {t.name: {"first": [], "again": []} for t in trees}
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            for _ in range(args.rounds):
                for tree in trees:
                    context = browser.new_context(bypass_csp=True)
                    url = servers[tree.name][1]
                    results[tree.name]["first"].append(visit(context, url))
                    results[tree.name]["again"].append(visit(context, url))
                    context.close()
            browser.close()
        print(
            f"== map page over loopback: {args.benchmarks} benchmarks x {args.questions} "
            f"questions, one pair, {args.rounds} rounds, load avg "
            f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} =="
        )
        for tree in trees:
            for when, label in (("first", "first visit"), ("again", "revisit")):
                wire = statistics.median(b for b, _ in results[tree.name][when])
                ms = statistics.median(m for _, m in results[tree.name][when])
                print(
                    f"{tree.name:>6} {label:<12} {wire / 1e6:8.3f} MB over the wire, "
                    f"{ms:7.0f} ms to the heatmap (median)"
                )
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=20)
    finally:
        if worktree is not None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                capture_output=True,
            )
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
