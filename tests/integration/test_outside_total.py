"""A Total that leaves benchmarks out says which: the map page names the Uncategorized ones (a
benchmark the taxonomy does not know, imported without a category) and how to count them."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app


def _table(path, benchmarks: tuple[str, ...], category: str | None = None):
    head = "model,benchmark,sample_id,correct,num_choices" + (",category" if category else "")
    lines = [head] + [
        f"{m},{b},s{i},{(i + j) % 2},4" + (f",{category}" if category else "")
        for b in benchmarks for j, m in enumerate(("a", "b")) for i in range(6)
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def _notice(db) -> str | None:
    """The notice of a fresh app's map page (the map is open to anyone)."""
    app = create_app(db, broker=BrokerSettings(url=None, data_dir=db.parent),
                     settings=WebSettings(secret_key="k" * 40, reconcile_seconds=3600))  # fmt: skip
    with TestClient(app) as client:
        page = client.get("/").text
    found = re.search(r'<p class="notice" id="outside-total">(.*?)</p>', page, re.S)
    return " ".join(found.group(1).split()) if found else None


def test_the_map_names_what_total_leaves_out_until_it_has_a_category(cli, tmp_path):
    cli("import", "table", _table(tmp_path / "r.csv", ("piqa", "my-own-bench", "zz <b>x</b>")))
    cli("pair", "add", "a", "b")
    said = _notice(cli.db)
    assert said is not None and said.startswith(
        "Total leaves out <b>Uncategorized</b> (2 benchmarks: my-own-bench, zz &lt;b&gt;x&lt;/b&gt;)"
    )
    assert "piqa" not in said and "category</code> column" in said
    # the category named on a later import: counted, and the notice goes
    cli("import", "table", _table(tmp_path / "c.csv", ("my-own-bench", "zz <b>x</b>"), "Math"))
    assert _notice(cli.db) is None
