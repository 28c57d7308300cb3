"""static/plotly.min.js is plotly.js's cartesian partial bundle (1.5 MB against the full
bundle's 4.8 MB: the map page's first load parses a third of the script). This holds only while
every trace type our scripts draw is one the bundle registers: a trace type it lacks draws
nothing, without an error."""

from __future__ import annotations

import re

from forgetmap.runtime.resources import resource_dir

STATIC = resource_dir("static")
VENDORED = {"plotly.min.js", "htmx.min.js"}
ALL_TRACES = set(
    "bar barpolar box candlestick carpet choropleth choroplethmap cone contour contourcarpet "
    "densitymap funnel funnelarea heatmap histogram histogram2d histogram2dcontour icicle image "
    "indicator isosurface mesh3d ohlc parcats parcoords pie quiver sankey scatter scatter3d "
    "scattercarpet scattergeo scattergl scattermap scatterpolar scatterpolargl scattersmith "
    "scatterternary splom streamtube sunburst surface table treemap violin volume waterfall".split()
)
"""Every trace type of plotly.js 4.1.1's full bundle."""


def _registered() -> set[str]:
    bundle = (STATIC / "plotly.min.js").read_text(encoding="utf-8")
    return set(re.findall(r'moduleType:"trace",name:"([a-z0-9]+)"', bundle))


def _drawn() -> set[str]:
    used: set[str] = set()
    for script in STATIC.glob("*.js"):
        if script.name not in VENDORED:
            used |= set(re.findall(r'type:\s*"([a-z0-9]+)"', script.read_text())) & ALL_TRACES
    return used


def test_the_bundle_is_the_cartesian_one():
    head = (STATIC / "plotly.min.js").read_text(encoding="utf-8")[:200]
    assert "plotly.js (cartesian - minified) v4.1.1" in head
    assert {"heatmap", "scatter", "bar"} <= _registered() < ALL_TRACES


def test_every_trace_type_the_pages_draw_is_in_the_bundle():
    drawn = _drawn()
    assert {"heatmap", "scatter"} <= drawn  # the map and the series pages
    assert drawn <= _registered(), f"not in static/plotly.min.js: {sorted(drawn - _registered())}"
