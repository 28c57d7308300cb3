"""The demo's two series on the series page, in a real browser: the zoo's in-process results of the
evaluated checkpoints imported as a table, the series named as `forgetmap demo` names them; the
curves are drawn with the zoo's own numbers and a point opens its pair."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.demo.evaluate import load_benchmarks

from tests.support.server import Server

pytestmark = pytest.mark.slow


def _write_results(zoo, report, models, path):
    items = {(it.benchmark, it.sample_id): it for v in load_benchmarks(zoo).values() for it in v}
    rows = {
        k: []
        for k in (
            "model",
            "benchmark",
            "sample_id",
            "seed",
            "correct",
            "num_choices",
            "category",
            "prompt",
        )
    }
    for model in models:
        for (bench, sample_id, seed), correct in report.results[model].items():
            item = items[(bench, sample_id)]
            for key, value in (
                ("model", model),
                ("benchmark", bench),
                ("sample_id", sample_id),
                ("seed", seed),
                ("correct", correct),
                ("num_choices", item.k),
                ("category", item.category),
                ("prompt", item.question),
            ):
                rows[key].append(value)
    table = pa.table({**rows, "num_choices": pa.array(rows["num_choices"], pa.int64())})
    pq.write_table(table, path)
    return path


@pytest.fixture(scope="module")
def server(zoo, runs, report, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo-series")
    db = tmp / "fm.duckdb"
    cli = CliRunner()
    evaluated = [c for run in zoo.series for c in run.checkpoints if c.model in report.results]
    models = ["demo-base", *[c.model for c in evaluated]]
    for args in (
        ["import", "table", str(_write_results(zoo, report, models, tmp / "zoo.parquet"))],
        *(
            [
                "series",
                "add",
                run.name,
                "--base",
                run.base,
                *[
                    a
                    for c in run.checkpoints
                    if c in evaluated
                    for a in ("--checkpoint", f"{c.model}@{c.step}")
                ],
            ]
            for run in zoo.series
        ),
    ):
        result = cli.invoke(main, ["--db", str(db), *args])
        assert result.exit_code == 0, result.output
    srv = Server(db)
    yield srv
    srv.stop()


def test_sft_series_page_draws_forgetting_growing(server, browser, runs, report):  # noqa: F811
    sft = runs["sft"]
    first, last = sft.checkpoints[0], sft.checkpoints[-1]
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server.url + "/series/1")
        assert sft.name in page.locator("h1").inner_text()
        charts = page.locator("#series-charts .series-chart")
        charts.first.locator(".main-svg").first.wait_for()
        categories = [charts.nth(i).get_attribute("data-category") for i in range(charts.count())]
        assert set(categories) == {"Knowledge/QA", "Language", "Logic", "Math", "Total"}
        total = page.evaluate(
            """() => [...document.querySelectorAll('#series-charts .series-chart')]
                   .find(el => el.dataset.category === 'Total').data
                   .filter(t => t.name === 'F_true').map(t => [t.x, t.y])[0]"""
        )
        expected = [report.pairs[c.model].categories["Total"]["f_true"] for c in (first, last)]
        assert total[0] == [first.step, last.step]
        assert total[1] == pytest.approx(expected, abs=1e-6)
        assert total[1][1] > total[1][0]  # forgetting grows along narrow SFT
        assert charts.last.locator("g.scatterlayer .trace .points path").count() >= 4

        # the last point of the Total chart opens the pair (demo-base, demo-sft-math)
        x, y = page.evaluate(
            """(step) => {
                const el = [...document.querySelectorAll('#series-charts .series-chart')]
                    .find(el => el.dataset.category === 'Total');
                el.scrollIntoView({block: 'center'});
                const fl = el._fullLayout, box = el.getBoundingClientRect();
                const t = el.data.find(t => t.name === 'F_true'), i = t.x.indexOf(step);
                return [box.left + fl.xaxis._offset + fl.xaxis.l2p(step),
                        box.top + fl.yaxis._offset + fl.yaxis.l2p(t.y[i])];
            }""",
            last.step,
        )
        page.mouse.click(x, y)
        page.wait_for_url("**/pairs/*")
        assert last.model in page.locator("h1 + p.sub").inner_text()
        assert errors == []
    finally:
        context.close()
