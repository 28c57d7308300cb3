// Dot chart of F_true and BT_true per benchmark with the table's 95% interval: the paired
// confidence sequence over all seeds (f_true_low ... bt_true_high, app.adaptive), valid for
// adaptive runs, so the chart and the table never show two intervals for one number.
document.addEventListener("DOMContentLoaded", () => {
  const el = document.getElementById("pair-chart");
  const dataEl = document.getElementById("pair-data");
  if (!el || !dataEl || !window.Plotly) return;
  const rows = JSON.parse(dataEl.textContent);
  const names = rows.map((r) => window.plotlyText(r.benchmark));  // static/text.js
  const used = (r) => r.partial ? `partial: n ${r.n} of ${r.full_size}` : `n ${r.n}`;
  // a bound the interval could not give (null) draws no whisker on that side
  const above = (r, field) => r[field + "_high"] === null ? 0 : Math.max(0, r[field + "_high"] - r[field]);
  const below = (r, field) => r[field + "_low"] === null ? 0 : Math.max(0, r[field] - r[field + "_low"]);
  const trace = (field, color, name) => ({
    type: "scatter", mode: "markers", name: name + " (95% interval)", x: rows.map((r) => r[field]), y: names,
    marker: { color: color, size: 8 },
    error_x: { type: "data", symmetric: false, color: color, thickness: 1.2,
      array: rows.map((r) => above(r, field)), arrayminus: rows.map((r) => below(r, field)) },
    customdata: rows.map((r) => [r[field + "_low"], r[field + "_high"], used(r)]),
    hovertemplate: "%{y}<br>" + name + " %{x:.1%}, 95% interval [%{customdata[0]:.1%}, %{customdata[1]:.1%}]"
      + "<br>%{customdata[2]}<extra></extra>",
  });
  Plotly.newPlot(el, [trace("f_true", "#c0392b", "F_true"), trace("bt_true", "#2e6fb7", "BT_true")], {
    height: Math.max(220, 60 + 22 * rows.length), margin: { l: 200, r: 10, t: 36, b: 40 },
    // "~%": as many decimals as the ticks need (".0%" printed "3%, 3%, 2%, 2%" on small ranges)
    xaxis: { tickformat: "~%", zeroline: true, rangemode: "tozero" }, yaxis: { autorange: "reversed", automargin: true },
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: "system-ui, -apple-system, Segoe UI, sans-serif", size: 12 },
  }, { displaylogo: false, responsive: true });
});
