"""axe-core (Deque's accessibility engine, through axe-playwright-python) on a page in Chromium: the
violations whose impact is serious or critical, as one line each."""

from __future__ import annotations

from tests.support.services import require_module

BLOCKING = ("serious", "critical")


def serious_violations(page) -> list[str]:
    """``rule (impact): N elements, e.g. SELECTOR`` for each serious or critical violation."""
    axe = require_module("axe_playwright_python.sync_playwright", "pip install -e '.[dev]'")
    found = axe.Axe().run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {len(v['nodes'])} elements, e.g. {v['nodes'][0]['target']}"
        for v in found
        if v["impact"] in BLOCKING
    ]
