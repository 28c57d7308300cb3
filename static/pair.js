// Dot chart of F_true and BT_true per benchmark with bootstrap CIs.
document.addEventListener("DOMContentLoaded", () => {
  const el = document.getElementById("pair-chart");
  const dataEl = document.getElementById("pair-data");
  if (!el || !dataEl || !window.Plotly) return;
  const rows = JSON.parse(dataEl.textContent);
  const names = rows.map((r) => window.plotlyText(r.benchmark));  // static/text.js
  const trace = (field, ci, color, name) => ({
    type: "scatter", mode: "markers", name: name, x: rows.map((r) => r[field]), y: names,
    marker: { color: color, size: 8 },
    error_x: { type: "data", symmetric: false, color: color, thickness: 1.2,
      array: rows.map((r) => r[ci][1] - r[field]), arrayminus: rows.map((r) => r[field] - r[ci][0]) },
    hovertemplate: "%{y}<br>" + name + " %{x:.1%}<extra></extra>",
  });
  Plotly.newPlot(el, [trace("f_true", "f_true_ci", "#c0392b", "F_true"), trace("bt_true", "bt_true_ci", "#2e6fb7", "BT_true")], {
    height: Math.max(220, 60 + 22 * rows.length), margin: { l: 200, r: 10, t: 36, b: 40 },
    xaxis: { tickformat: ".0%", zeroline: true, rangemode: "tozero" }, yaxis: { autorange: "reversed", automargin: true },
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: "system-ui, -apple-system, Segoe UI, sans-serif", size: 12 },
  }, { displaylogo: false, responsive: true });
});
