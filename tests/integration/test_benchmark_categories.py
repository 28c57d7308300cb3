"""Stable, explained categories. A Total that leaves benchmarks out says which: the map page names
the Uncategorized ones (a benchmark the taxonomy does not know, imported without a category) and
how to count them. A later import that names a category for one is told, with the pairs whose
numbers it moves, and kept in a history; one that names another category for a benchmark whose
category was named is refused, and imports nothing."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app


def _table(
    path,
    benchmarks: tuple[str, ...],
    category: str | None = None,
    models: tuple[str, ...] = ("a", "b"),
):
    head = "model,benchmark,sample_id,correct,num_choices" + (",category" if category else "")
    lines = [head] + [
        f"{m},{b},s{i},{_correct(b, j, i)},4" + (f",{category}" if category else "")
        for b in benchmarks
        for j, m in enumerate(models)
        for i in range(6)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _correct(benchmark: str, model: int, sample: int) -> int:
    """piqa: every other sample right; the others: the first model right, the second wrong (all
    forgotten), so that counting them moves the Total."""
    return (sample + model) % 2 if benchmark == "piqa" else int(model == 0)


def _map_page(db) -> str:
    """A fresh app's map page (the map is open to anyone)."""
    app = create_app(
        db,
        broker=BrokerSettings(url=None, data_dir=db.parent),
        settings=WebSettings(secret_key="k" * 40, reconcile_seconds=3600),
    )
    with TestClient(app) as client:
        return client.get("/").text


def _notice(db) -> str | None:
    """The map page's notice of what Total leaves out."""
    page = _map_page(db)
    found = re.search(r'<p class="notice" id="outside-total">(.*?)</p>', page, re.S)
    return " ".join(found.group(1).split()) if found else None


def test_the_map_names_what_total_leaves_out_until_it_has_a_category(cli, tmp_path):
    cli("import", "table", _table(tmp_path / "r.csv", ("piqa", "my-own-bench", "zz <b>x</b>")))
    cli("pair", "add", "a", "b")
    said = _notice(cli.db)
    assert said is not None and said.startswith(
        "Total leaves out <b>Uncategorized</b> "
        "(2 benchmarks: my-own-bench, zz &lt;b&gt;x&lt;/b&gt;)"
    )
    assert "piqa" not in said and "category</code> column" in said
    before = _total(cli)
    # the category named on a later import: counted, told, kept; the notice goes
    said = cli(
        "import", "table", _table(tmp_path / "c.csv", ("my-own-bench", "zz <b>x</b>"), "Math")
    ).stdout
    for name in ("my-own-bench", "zz <b>x</b>"):
        assert (
            f"benchmark {name}: category Uncategorized -> Math; the numbers of pair 1 move "
            "with it (the history: GET /api/benchmarks/category-changes)"
        ) in said
    assert _notice(cli.db) is None
    assert _total(cli) != before  # Total now counts them: the change that was silent
    history = _history(cli.db)
    assert sorted(
        (c["benchmark"], c["old"], c["new"], c["pairs"], c["source"]) for c in history
    ) == [
        ("my-own-bench", "Uncategorized", "Math", [1], "import:table"),
        ("zz <b>x</b>", "Uncategorized", "Math", [1], "import:table"),
    ]
    assert all(c["changed_at"] for c in history)
    page = _map_page(cli.db)  # the history on the map page, names escaped
    history_html = page[page.index('id="category-history"') : page.index("</details>")]
    assert "zz &lt;b&gt;x&lt;/b&gt;" in history_html and "<b>x</b>" not in history_html
    assert "Uncategorized → Math" in history_html and 'href="/pairs/1"' in history_html


def test_another_category_for_a_named_one_is_refused_and_nothing_is_imported(cli, tmp_path):
    cli("import", "table", _table(tmp_path / "a.csv", ("my-own-bench",), "Math"))
    refused = cli(
        "import",
        "table",
        _table(tmp_path / "b.csv", ("my-own-bench",), "Logic", models=("c",)),
        ok=False,
    )
    assert refused.exit_code == 2
    assert refused.stderr.strip().splitlines() == [
        "error: benchmark 'my-own-bench' is in category 'Math' (named by its first results); "
        "these results name 'Logic': leave its category empty, or give 'Math' (a category once "
        "named stays, so that stored pairs keep their numbers) (nothing was imported)"
    ]
    assert "c" not in cli("map", "--format", "json").stdout  # the import wrote nothing
    # the same category, or none, is fine; and nothing was recorded as a change
    cli("import", "table", _table(tmp_path / "c.csv", ("my-own-bench",), "Math", models=("c",)))
    cli("import", "table", _table(tmp_path / "d.csv", ("my-own-bench",), models=("d",)))
    assert _history(cli.db) == []


def _total(cli) -> float:
    records = json.loads(cli("map", "--format", "json").stdout)
    return next(r["f_true"] for r in records if r["category"] == "Total")


def _history(db) -> list[dict]:
    app = create_app(
        db,
        broker=BrokerSettings(url=None, data_dir=db.parent),
        settings=WebSettings(secret_key="k" * 40, reconcile_seconds=3600),
    )
    with TestClient(app) as client:
        return client.get("/api/benchmarks/category-changes").json()
