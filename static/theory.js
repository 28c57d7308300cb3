// The theory lab's four plots, from the JSON the server computed.
document.addEventListener("DOMContentLoaded", () => {
  const el = document.getElementById("theory-data");
  if (!el || !window.Plotly) return;
  const d = JSON.parse(el.textContent);
  const base = { height: 320, margin: { l: 60, r: 10, t: 10, b: 45 }, legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { family: "system-ui, sans-serif", size: 12 } };
  const cfg = { displaylogo: false, responsive: true };
  const red = "#c0392b", blue = "#2e6fb7", grey = "#777";
  const lambda = "λ = " + window.plotlyText(d.params.replay);
  Plotly.newPlot("plot-weights", [
    { x: d.weights.step, y: d.weights.forward_alpha, name: "forward KL (SFT)", line: { color: red } },
    { x: d.weights.step, y: d.weights.forward_replay_alpha, name: "SFT, replay " + lambda, line: { color: red, dash: "dash" } },
    { x: d.weights.step, y: d.weights.reverse_alpha, name: "reverse KL (RL)", line: { color: blue } },
  ], { ...base, xaxis: { title: { text: "step" } }, yaxis: { title: { text: "old weight α" }, range: [0, 1] } }, cfg);
  Plotly.newPlot("plot-drift", [
    { x: d.drift.separation, y: d.drift.max_drift, name: "max |Δμ_old|", mode: "lines+markers", line: { color: blue } },
    { x: d.drift.separation, y: d.drift.bc, name: "BC", line: { color: grey } },
    { x: d.drift.separation, y: d.drift.misassignment_bound, name: "bound", line: { color: grey, dash: "dash" } },
  ], { ...base, xaxis: { title: { text: "separation δ" } }, yaxis: { type: "log", title: { text: "drift / BC (log)" }, exponentformat: "e" } }, cfg);
  Plotly.newPlot("plot-replay", [
    { x: d.replay.replay, y: d.replay.forward_final_alpha, name: "forward KL (SFT)", mode: "lines+markers", line: { color: red } },
    { x: d.replay.replay, y: d.replay.reverse_final_alpha, name: "reverse KL (RL)", mode: "lines+markers", line: { color: blue } },
  ], { ...base, xaxis: { title: { text: "replay fraction λ" }, range: [0, Math.max(...d.replay.replay)] },
    yaxis: { title: { text: "final α" }, range: [0, 1] },
    // the λ chosen above, on the curve: the grid always holds it (theory_plots.replay_grid)
    shapes: [{ type: "line", xref: "x", yref: "paper", x0: d.params.replay, x1: d.params.replay, y0: 0, y1: 1, line: { color: grey, dash: "dash", width: 1 } }],
    annotations: [{ xref: "x", yref: "paper", x: d.params.replay, y: 1, yanchor: "bottom", text: lambda, showarrow: false, font: { size: 11, color: grey } }] }, cfg);
  const s = d.starvation.by_batch_size;
  const traces = [
    { x: s.batch_size, y: s.on_policy_empirical, name: "on-policy", mode: "lines+markers", line: { color: red } },
    { x: s.batch_size, y: s.replay_empirical, name: "replay " + lambda, mode: "lines+markers", line: { color: blue } },
  ];
  traces.push({ x: s.batch_size, y: s.on_policy_theory, name: "(1−α)^B", line: { color: red, dash: "dot" } });
  traces.push({ x: s.batch_size, y: s.replay_theory, name: "((1−λ)(1−α))^B", line: { color: blue, dash: "dot" } });
  Plotly.newPlot("plot-starvation", traces, { ...base, xaxis: { title: { text: "batch size" }, type: "log" }, yaxis: { title: { text: "share of batches" }, range: [0, 1] } }, cfg);
});
