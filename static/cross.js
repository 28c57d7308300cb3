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
  const stages = [...new Set(sized.map((r) => r.stage || "unspecified"))];
  const traces = stages.map((stage) => {
    const rs = sized.filter((r) => (r.stage || "unspecified") === stage);
    return {
      type: "scatter", mode: "markers", name: esc(stage), x: rs.map((r) => r.size_params), y: rs.map((r) => r.f_true),
      text: rs.map((r) => esc(r.label)), customdata: rs.map((r) => r.pair_id), marker: { size: 10 },
      error_y: { type: "data", array: rs.map((r) => r.f_true_std || 0), thickness: 1 },
      hovertemplate: "%{text}<br>size %{x:.3s}<br>F_true %{y:.1%}<extra>%{fullData.name}</extra>",
    };
  });
  Plotly.newPlot(el, traces, {
    height: 380, margin: { l: 60, r: 10, t: 10, b: 50 }, xaxis: { type: "log", title: { text: "parameters" } },
    yaxis: { tickformat: "~%", title: { text: "Total F_true" }, rangemode: "tozero" },
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
  }, { displaylogo: false, responsive: true });
  el.on("plotly_click", (ev) => { window.location.href = "/pairs/" + ev.points[0].customdata; });
});
