// The series page: per category, F_true and BT_true over training steps with bands of their 95%
// interval across seeds, the noise floor band, and a star at the first step where F_true clears
// its noise floor beyond that same interval (one statistic for the bands and the star).
// Names are untrusted: Plotly renders <a>, <b>, <br> inside labels and hovers, so every name is
// escaped before it reaches Plotly.
(function () {
  "use strict";
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;" }[c]));
  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");

  function band(steps, lo, hi, color, name) {
    // a filled band: the upper edge, then the lower edge back (one closed polygon)
    return {
      type: "scatter", mode: "lines", x: steps.concat(steps.slice().reverse()), y: hi.concat(lo.slice().reverse()),
      fill: "toself", fillcolor: color, line: { width: 0 }, hoverinfo: "skip", showlegend: false, name: name,
    };
  }

  function chart(el, view, category) {
    const rows = view.records.filter((r) => r.category === category);
    const sweep = view.axis === "mix";  // a merge sweep: the step is the mix in thousandths
    const place = (r) => (sweep ? r.step / 1000 : r.step);
    const axisName = sweep ? "mix" : view.axis === "soup" ? "checkpoints averaged" : "step";
    const steps = rows.map(place);
    const half = (x) => (x === null || x === undefined ? 0 : x);  // one seed: no interval
    const line = (field, color, name) => ({
      type: "scatter", mode: "lines+markers", name: name, x: steps, y: rows.map((r) => r[field]),
      line: { color: color, width: 2 }, marker: { color: color, size: 8 },
      customdata: rows.map((r) => [r.pair_id, esc(r.post), pct(r[field]), pct(r[field + "_margin"]), pct(r.noise_floor)]),
      hovertemplate: axisName + " %{x} · %{customdata[1]}<br>" + name + " %{customdata[2]} ± %{customdata[3]} (95% across seeds)" +
        "<br>noise floor %{customdata[4]}<extra>click for the pair</extra>",
    });
    const traces = [
      band(steps, steps.map(() => 0), rows.map((r) => r.noise_floor || 0), "rgba(120,120,120,0.22)", "noise floor"),
      band(steps, rows.map((r) => Math.max(r.f_true - half(r.f_true_margin), 0)), rows.map((r) => r.f_true + half(r.f_true_margin)), "rgba(192,57,43,0.18)", "F_true 95%"),
      band(steps, rows.map((r) => Math.max(r.bt_true - half(r.bt_true_margin), 0)), rows.map((r) => r.bt_true + half(r.bt_true_margin)), "rgba(46,111,183,0.16)", "BT_true 95%"),
      line("f_true", "#c0392b", "F_true"),
      line("bt_true", "#2e6fb7", "BT_true"),
    ];
    const first = view.first_clear[category];
    if (first !== undefined) {
      const r = rows.find((x) => x.step === first);
      traces.push({
        type: "scatter", mode: "markers", name: "clears noise", x: [place(r)], y: [r.f_true],
        marker: { symbol: "star", size: 16, color: "#111", line: { color: "#fff", width: 1 } },
        customdata: [[r.pair_id, esc(r.post), pct(r.f_true), pct(r.f_true_margin), pct(r.noise_floor)]],
        hovertemplate: "first " + axisName + " where F_true clears the noise floor: %{x}<extra></extra>",
      });
    }
    Plotly.newPlot(el, traces, {
      title: { text: esc(category), font: { size: 14 }, x: 0.02 }, height: 260,
      margin: { l: 48, r: 10, t: 34, b: 36 }, showlegend: false,
      xaxis: sweep
        ? { title: { text: "mix (the post model's share; 0 is the base)" }, range: [0, 1.02] }
        : view.axis === "soup"
        ? { title: { text: "checkpoints averaged (the last N; 1 is the last checkpoint)" } }
        : { title: { text: "step" }, type: steps.length > 2 && steps[steps.length - 1] / Math.max(steps[0], 1) > 1000 ? "log" : "linear" },
      yaxis: { tickformat: "~%", rangemode: "tozero" },
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: { family: "system-ui, -apple-system, Segoe UI, sans-serif", size: 11 },
    }, { displaylogo: false, responsive: true });
    el.on("plotly_click", (ev) => {
      const p = ev.points && ev.points[0];
      if (p && p.customdata) window.location.href = "/pairs/" + p.customdata[0];
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const root = document.getElementById("series-charts");
    const dataEl = document.getElementById("series-data");
    if (!root || !dataEl || !window.Plotly) return;
    const view = JSON.parse(dataEl.textContent);
    for (const category of view.categories) {
      const el = document.createElement("div");
      el.className = "series-chart";
      el.dataset.category = category;
      root.appendChild(el);
      chart(el, view, category);
    }
    const form = document.getElementById("question-filters");
    if (form) form.addEventListener("change", () => form.requestSubmit());
  });
})();
