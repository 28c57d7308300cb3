// Scatter of Total F_true vs base model size, one trace per stage, one dot per recipe (a pair, or
// a series through its latest checkpoint: the atlas's count).
document.addEventListener("DOMContentLoaded", async () => {
  const el = document.getElementById("size-scatter");
  if (!el || !window.Plotly) return;
  const rows = await (await fetch("/api/cross/size?recipes=true")).json();
  const sized = rows.filter((r) => r.size_params);
  if (!sized.length) {
    el.innerHTML = "<p class='empty' id='size-scatter-empty'>No recipe has a base model size yet: set one with "
      + "<code>forgetmap model set NAME --size 7e9</code>, or fill the unknown ones from the local Hugging Face cache "
      + "with <code>forgetmap model sizes --from-hub</code>.</p>";
    return;
  }
  const esc = window.plotlyText;  // static/text.js: user text stays text in Plotly
  // recipes of one base share its size: drawn at one x they hide one another, so each group is
  // spread a little around its size (a few percent, on the log axis); the hover keeps the size
  const bySize = new Map();
  for (const r of sized) bySize.set(r.size_params, [...(bySize.get(r.size_params) || []), r]);
  const drawnAt = new Map();
  for (const [size, group] of bySize) {
    group.forEach((r, i) => drawnAt.set(r, size * Math.exp(0.04 * (i - (group.length - 1) / 2))));
  }
  const stages = [...new Set(sized.map((r) => r.stage || "unspecified"))];
  const traces = stages.map((stage) => {
    const rs = sized.filter((r) => (r.stage || "unspecified") === stage);
    return {
      type: "scatter", mode: "markers", name: esc(stage), x: rs.map((r) => drawnAt.get(r)), y: rs.map((r) => r.f_true),
      text: rs.map((r) => esc(r.label)), customdata: rs.map((r) => [r.pair_id, r.size_params]),
      marker: { size: 10, opacity: 0.8, line: { width: 1, color: "#fff" } },
      error_y: { type: "data", array: rs.map((r) => r.f_true_std || 0), thickness: 1 },
      hovertemplate: "%{text}<br>size %{customdata[1]:.3s}<br>F_true %{y:.1%}<extra>%{fullData.name}</extra>",
    };
  });
  Plotly.newPlot(el, traces, {
    height: 380, margin: { l: 60, r: 10, t: 10, b: 50 }, xaxis: { type: "log", title: { text: "parameters" } },
    yaxis: { tickformat: "~%", title: { text: "Total F_true" }, rangemode: "tozero" },
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
  }, { displaylogo: false, responsive: true });
  el.on("plotly_click", (ev) => { window.location.href = "/pairs/" + ev.points[0].customdata[0]; });
});
