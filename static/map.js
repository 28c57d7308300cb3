// The forgetting map: a Plotly heatmap of pairs x categories (or benchmarks), state in the URL.
(function () {
  "use strict";
  const REDS = [[0, "#fbf4f2"], [0.5, "#ef8a62"], [1, "#b2182b"]];
  const BLUES = [[0, "#f2f6fb"], [0.5, "#67a9cf"], [1, "#2166ac"]];
  const DIVERGING = [[0, "#b2182b"], [0.5, "#f7f7f7"], [1, "#2166ac"]];  // red = net forgetting
  // every value is computed by the app (app/metrics.py: net and f_rel included); this file only draws.
  // range: the value drawn darkest unless the URL's zmax says otherwise (a fixed range, so that one
  // large cell does not wash out the rest); noise: a forgetting metric, faded inside the noise floor
  const METRICS = {
    f_true: { label: "F_true", scale: REDS, range: 0.25, noise: true, value: (c) => c.f_true, std: (c) => c.f_true_std },
    bt_true: { label: "BT_true", scale: BLUES, range: 0.25, value: (c) => c.bt_true, std: (c) => c.bt_true_std },
    net: { label: "BT_true − F_true", scale: DIVERGING, range: 0.25, diverging: true, value: (c) => c.net },
    f: { label: "raw F", scale: REDS, range: 0.25, noise: true, value: (c) => c.f },
    bt: { label: "raw BT", scale: BLUES, range: 0.25, value: (c) => c.bt },
    f_rel: { label: "F_true / F_max", scale: REDS, range: 1, noise: true, value: (c) => c.f_rel },
  };
  // a faded cell is veiled: a second heatmap, this colour over the cells that do not survive
  const VEIL = "rgba(255,255,255,0.7)";
  const MISSING = "#d9dce3";  // a cell with no results: grey, apart from every value's colour
  // whether a cell is faded, and its hover line: why, or what its tests say (app-computed
  // fields: significance.py; the text holds no names, only numbers)
  function verdict(c, metric) {
    const p = c.p_adjusted === null || c.p_adjusted === undefined ? null : Number(c.p_adjusted).toPrecision(2);
    const reasons = [];
    if (c.significant === false) reasons.push("not significant (BH-adjusted p " + p + " ≥ 0.05)");
    if (metric.noise && c.below_noise === true) reasons.push("F_true's interval does not clear the noise floor");
    const tests = p === null ? "no McNemar test at this level" : "BH-adjusted p " + p;
    const noise = c.below_noise === null || c.below_noise === undefined ? "noise floor: undecided" : c.below_noise ? "inside the noise floor" : "clears the noise floor";
    return { faded: reasons.length > 0, text: reasons.length ? "faded: " + reasons.join("; ") : "survives: " + tests + ", " + noise };
  }
  const esc = window.plotlyText;  // static/text.js: user text stays text in Plotly
  const pct = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : (100 * x).toFixed(1) + "%");
  const interval = (lo, hi) => (lo === null || lo === undefined ? "–" : "[" + pct(lo) + ", " + pct(hi) + "]");
  const count = (x) => (x === null || x === undefined ? "–" : Number(x).toLocaleString("en-US"));
  // n used per seed (summed over a category's benchmarks); a partial one says how many of how many
  const used = (c) => "n " + count(c.n) + (c.partial ? " · partial: " + count(c.n) + " of " + count(c.full_size) : "");

  // rows as a chain of nearest neighbours: from the first row (as added), each next row the
  // one closest to the last by the metric over the columns both have (root mean square of the
  // differences; rows sharing no column are farthest), ties kept in the order added. Rows that
  // forget alike end up side by side.
  function similarFirst(rows, data, metric, colIndex) {
    const values = new Map(rows.map((r) => [r.id, data.columns.map(() => null)]));
    for (const c of data.cells) {
      const row = values.get(c.pair_id), j = colIndex.get(c.column);
      const v = metric.value(c);
      if (row && j !== undefined && v !== null && v !== undefined) row[j] = v;
    }
    const distance = (a, b) => {
      let sum = 0, n = 0;
      for (let j = 0; j < a.length; j++) {
        if (a[j] === null || b[j] === null) continue;
        sum += (a[j] - b[j]) ** 2; n += 1;
      }
      return n ? Math.sqrt(sum / n) : Infinity;
    };
    const left = rows.slice(1), chain = rows.slice(0, 1);
    while (left.length) {
      const last = values.get(chain[chain.length - 1].id);
      let best = 0, nearest = distance(last, values.get(left[0].id));
      for (let i = 1; i < left.length; i++) {
        const d = distance(last, values.get(left[i].id));
        if (d < nearest) { best = i; nearest = d; }
      }
      chain.push(left.splice(best, 1)[0]);
    }
    return chain;
  }

  function render() {
    const el = document.getElementById("heatmap");
    const dataEl = document.getElementById("map-data");
    if (!el || !dataEl || !window.Plotly) return;
    const data = JSON.parse(dataEl.textContent);
    if (!data.pairs.length) { el.style.display = "none"; return; }
    const metricName = document.getElementById("metric").value;
    const metric = METRICS[metricName] || METRICS.f_true;
    const level = el.dataset.level;
    const seen = new Map();
    // a training run is one row: the checkpoint picked in its step selector (the newest at first)
    const runRow = new Map();
    for (const s of data.series || []) {
      const select = document.querySelector("select[data-series='" + s.id + "']");
      const step = select ? Number(select.value) : s.steps[s.steps.length - 1].step;
      for (const st of s.steps) runRow.set(st.pair_id, st.step === step ? s.name + " @ step " + st.step : null);
    }
    const rows = data.pairs.filter((p) => runRow.get(p.id) !== null).map((p) => {
      const raw = runRow.get(p.id) || p.label || p.base + " → " + p.post;
      let name = esc(raw);
      if (seen.has(name)) name += " #" + p.id;
      seen.set(name, true);
      return { id: p.id, name: name, raw: raw };
    });
    const colIndex = new Map(data.columns.map((c, i) => [c, i]));
    // rows in the order chosen above the map: as added, by the metric's Total (the row's mean
    // over its cells where the map has no Total column), largest first, by name, or similar
    // rows together
    const order = (document.getElementById("order") || {}).value || "added";
    if (order === "name") rows.sort((a, b) => a.name.localeCompare(b.name));
    if (order === "total") {
      const hasTotal = colIndex.has("Total");
      const sums = new Map();
      for (const c of data.cells) {
        const v = metric.value(c);
        if (v === null || v === undefined || (hasTotal && c.column !== "Total")) continue;
        const s = sums.get(c.pair_id) || [0, 0];
        sums.set(c.pair_id, [s[0] + v, s[1] + 1]);
      }
      const key = (r) => { const s = sums.get(r.id); return s ? s[0] / s[1] : -Infinity; };
      rows.sort((a, b) => key(b) - key(a));
    }
    if (order === "similar") rows.splice(0, rows.length, ...similarFirst(rows, data, metric, colIndex));
    const rowIndex = new Map(rows.map((r, i) => [r.id, i]));
    // at benchmark level the columns stand under their categories (named above the map, a line
    // between two), the category map's Total after them; the hover names both
    const groups = data.groups || null;
    const axisX = data.columns.map(esc);
    const shownColumn = data.columns.map((c, j) => (groups && groups[j] !== c ? esc(groups[j]) + " · " : "") + esc(c));
    const z = rows.map(() => data.columns.map(() => null));
    const faded = rows.map(() => data.columns.map(() => false));
    const partial = rows.map(() => data.columns.map(() => false));
    const marked = rows.map(() => data.columns.map(() => false));
    const custom = rows.map(() => data.columns.map(() => null));
    const present = rows.map(() => data.columns.map(() => false));
    for (const c of data.cells) {
      const i = rowIndex.get(c.pair_id), j = colIndex.get(c.column);
      if (i === undefined || j === undefined) continue;
      present[i][j] = true;
      z[i][j] = metric.value(c);
      partial[i][j] = Boolean(c.partial);
      const std = metric.std ? metric.std(c) : null;
      const v = verdict(c, metric);
      // a score set's map: a cell whose F_true moved by more than its interval (app-computed)
      if (c.depends_on_extractor) v.text += " · depends on the extractor: F_true moves " + pct(c.f_true_shift) + " from the harness's grades";
      // asking again (?probes=1): the recovered flips only beside the shuffled control's count
      if (c.n_10_probed !== null && c.n_10_probed !== undefined) v.text += " · asked again: " + c.n_10_recovered + " of " + c.n_10_probed + " flips recovered (shuffled control: " + c.recovered_control + ")";
      marked[i][j] = Boolean(c.depends_on_extractor);
      faded[i][j] = v.faded;
      custom[i][j] = [
        pct(z[i][j]) + (std !== null && std !== undefined ? " ± " + pct(std) : ""),
        pct(c.noise_floor), c.seeds, c.n_benchmarks, pct(c.f_true), pct(c.bt_true), pct(c.f_max),
        c.pair_id, c.column, used(c),
        interval(c.f_true_low, c.f_true_high), interval(c.bt_true_low, c.bt_true_high), v.text,
        shownColumn[j],
      ];
    }
    const top = Number(el.dataset.zmax) || metric.range;
    const trace = {
      type: "heatmap", z: z, x: axisX, y: rows.map((r) => r.name), customdata: custom,
      colorscale: metric.scale, name: "cells",
      zmin: metric.diverging ? -top : 0, zmax: top, xgap: 2, ygap: 2,
      hovertemplate: "%{y}<br>%{customdata[13]}<br>" + metric.label + ": %{customdata[0]}<br>%{customdata[12]}" +
        "<br>noise floor: %{customdata[1]}<br>F_true %{customdata[4]} · BT_true %{customdata[5]} · F_max %{customdata[6]}" +
        "<br>95% CI: F_true %{customdata[10]} · BT_true %{customdata[11]}<br>%{customdata[9]}" +
        "<br>seeds: %{customdata[2]}, benchmarks: %{customdata[3]}<extra>click for the flipped questions</extra>",
      colorbar: { title: { text: metric.label, side: "right" }, tickformat: "~%", thickness: 14, len: 0.9 },
    };
    // a partial cell (fewer paired samples than the benchmark has) carries a star
    const text = z.map((row, i) => row.map((v, j) => (v === null ? "" : (100 * v).toFixed(1) + (partial[i][j] ? "*" : "") + (marked[i][j] ? "†" : ""))));
    if (data.columns.length <= 16 && rows.length <= 30) {
      trace.text = text; trace.texttemplate = "%{text}"; trace.textfont = { size: 11 };
    }
    // a heatmap has one opacity per trace, so the veil is its own trace; "skip": the hover and the
    // click stay the cell's own (whose hover line says why it is faded)
    const veil = {
      type: "heatmap", name: "faded", x: trace.x, y: trace.y, xgap: 2, ygap: 2, zmin: 0, zmax: 1,
      z: faded.map((row) => row.map((f) => (f ? 1 : null))), colorscale: [[0, VEIL], [1, VEIL]],
      showscale: false, hoverinfo: "skip",
    };
    if (trace.text) {
      // a faded cell's number is written on the veil, dark on its light colour: under it the
      // cell's own text (white on a dark cell) would be white on near-white
      veil.text = text.map((row, i) => row.map((t, j) => (faded[i][j] ? t : "")));
      veil.texttemplate = "%{text}"; veil.textfont = { size: 11, color: "#4a5263" };
      trace.text = text.map((row, i) => row.map((t, j) => (faded[i][j] ? "" : t)));
    }
    // many pairs: thinner rows, so a thousand pairs stay one scrollable picture
    const rowHeight = rows.length > 60 ? 16 : 40;
    const height = Math.max(level === "benchmark" ? 420 : 320, 60 + rowHeight * rows.length + (level === "benchmark" ? 200 : 60));
    const layout = {
      height: height, margin: { l: 20, r: 20, t: 10, b: 20 },
      xaxis: { side: "bottom", tickangle: level === "benchmark" ? -50 : 0, automargin: true },
      yaxis: { autorange: "reversed", automargin: true },
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: { family: "system-ui, -apple-system, Segoe UI, sans-serif", size: 12 },
    };
    if (groups) {
      // a category axis places column j at j: each run of one category is labelled over its middle
      layout.annotations = [];
      layout.shapes = [];
      for (let start = 0; start < groups.length;) {
        let end = start;
        while (end + 1 < groups.length && groups[end + 1] === groups[start]) end += 1;
        layout.annotations.push({
          x: (start + end) / 2, xref: "x", y: 1, yref: "paper", yanchor: "bottom", showarrow: false,
          text: esc(groups[start]), font: { size: 11, color: "#445" },
        });
        if (start > 0) {
          layout.shapes.push({ type: "line", x0: start - 0.5, x1: start - 0.5, xref: "x", y0: 0, y1: 1,
            yref: "paper", line: { color: "#556", width: 2 } });
        }
        start = end + 1;
      }
      layout.margin.t = 28;
    }
    const lines = layout.shapes || [];
    const traces = [trace, veil];
    const recoveryEl = document.getElementById("recovery-data");
    if (recoveryEl) {
      // the optional recoverability column: its own axis and colour scale (a share, not a flip rate)
      const rec = JSON.parse(recoveryEl.textContent);
      const cell = (r) => rec[String(r.id)] || null;
      const share = (r) => (cell(r) && cell(r).symmetric !== null ? cell(r).symmetric : null);
      const range = (x, lo, hi) => pct(x) + (lo !== null && lo !== undefined ? " [" + pct(lo) + ", " + pct(hi) + "]" : "");
      traces.push({
        type: "heatmap", xaxis: "x2", yaxis: "y", x: ["Recoverability"], y: rows.map((r) => r.name),
        z: rows.map((r) => [share(r)]), zmin: 0, zmax: 1, showscale: false, xgap: 2, ygap: 2,
        colorscale: [[0, "#f3f8f1"], [0.5, "#7fbf7b"], [1, "#1b7837"]],
        text: rows.map((r) => [share(r) === null ? "" : (100 * share(r)).toFixed(0) + "%"]),
        texttemplate: "%{text}", textfont: { size: 11 },
        customdata: rows.map((r) => {
          const c = cell(r);
          if (!c) return [["recovery", r.id, "no analysis", "", ""]];
          return [["recovery", r.id, range(c.symmetric, c.symmetric_lo, c.symmetric_hi),
            range(c.control_symmetric, c.control_symmetric_lo, c.control_symmetric_hi), esc(c.corpus)]];
        }),
        hovertemplate: "%{y}<br>symmetric share, bias + T: %{customdata[2]}" +
          "<br>noise control: %{customdata[3]}<br>corpus: %{customdata[4]}<extra>click for the analysis</extra>",
      });
      layout.xaxis.domain = [0, 0.86];
      layout.xaxis2 = { domain: [0.89, 1], side: "bottom", automargin: true };
      trace.colorbar.x = 1.01;
    }
    // readable cells on a narrow screen: at least MIN_CELL px a column beside the row names,
    // the box scrolls sideways (style.css) rather than the page, or the cells shrinking to slivers
    const MIN_CELL = level === "benchmark" ? 28 : 64;
    const names = Math.min(360, 7 * Math.max(12, ...rows.map((r) => String(r.name).length)));
    const colorbar = 90;
    el.style.minWidth = (names + colorbar + MIN_CELL * (data.columns.length + (recoveryEl ? 1 : 0))) + "px";
    // a pair with no results on a column is drawn as missing (grey, "no results"), never as the
    // pale colour of a zero; the last trace, so that the others keep their places
    if (present.some((row) => row.includes(false))) {
      traces.push({
        type: "heatmap", name: "missing", x: trace.x, y: trace.y, xgap: 2, ygap: 2, zmin: 0, zmax: 1,
        z: present.map((row) => row.map((p) => (p ? null : 1))), colorscale: [[0, MISSING], [1, MISSING]],
        showscale: false, text: present.map((row) => row.map((p) => (p ? "" : "–"))), texttemplate: "%{text}",
        textfont: { size: 11, color: "#667" }, customdata: rows.map(() => shownColumn),
        hovertemplate: "%{y}<br>%{customdata}<br>no results: this pair has no paired samples here<extra></extra>",
      });
    }
    Plotly.react(el, traces, layout, { displaylogo: false, responsive: true });
    // a cell's flipped questions: 0->1 for a gain metric (or net above zero), else 1->0; Total,
    // at either level, every flip of the pair
    const open = (pairId, column, value) => {
      const transition = metricName.startsWith("bt") || metricName === "net" && value > 0 ? "01" : "10";
      let url = "/pairs/" + pairId + "/samples?transition=" + transition;
      if (column !== "Total") url += (level === "benchmark" ? "&benchmark=" : "&category=") + encodeURIComponent(column);
      window.location.href = url;
    };
    el.removeAllListeners && el.removeAllListeners("plotly_click");
    el.on("plotly_click", (ev) => {
      const point = ev.points && ev.points[0];
      if (!point || !point.customdata || point.data.name === "missing") return;
      if (point.customdata[0] === "recovery") {
        window.location.href = "/pairs/" + point.customdata[1] + "#recoverability";
        return;
      }
      open(point.customdata[7], point.customdata[8], point.z);
    });
    // keyboard reach: Tab to the map, arrows move a frame from cell to cell (said aloud by the
    // live region below the map), Enter opens the framed cell as a click does
    const said = document.getElementById("heatmap-focus");
    const at = { i: Math.min(Number(el.dataset.row) || 0, rows.length - 1), j: Math.min(Number(el.dataset.col) || 0, data.columns.length - 1) };
    const frame = (show) => {
      el.dataset.row = at.i; el.dataset.col = at.j;
      const box = { type: "rect", xref: "x", yref: "y", x0: at.j - 0.5, x1: at.j + 0.5, y0: at.i - 0.5, y1: at.i + 0.5, line: { color: "#1d2330", width: 3 } };
      Plotly.relayout(el, { shapes: show ? [...lines, box] : lines });
      if (!show || !said) return;
      const v = z[at.i][at.j];
      said.textContent = rows[at.i].raw + ", " + data.columns[at.j] + ": " + metric.label + " " +
        (present[at.i][at.j] ? pct(v) + (faded[at.i][at.j] ? " (faded)" : "") : "no results");
    };
    el.onfocus = () => frame(true);
    el.onblur = () => frame(false);
    el.onkeydown = (ev) => {
      const moves = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] };
      if (moves[ev.key]) {
        ev.preventDefault();
        at.i = Math.max(0, Math.min(rows.length - 1, at.i + moves[ev.key][0]));
        at.j = Math.max(0, Math.min(data.columns.length - 1, at.j + moves[ev.key][1]));
        frame(true);
      } else if (ev.key === "Enter" && present[at.i][at.j]) {
        ev.preventDefault();
        open(rows[at.i].id, data.columns[at.j], z[at.i][at.j]);
      }
    };
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("map-controls");
    if (!form) return;
    // a run's checkpoint is in the URL (step.<series id>): a reload, a shared link and the
    // controls' own reloads keep it; the newest step needs none
    const url = new URL(window.location.href);
    for (const select of document.querySelectorAll("select[data-series]")) {
      const key = "step." + select.dataset.series;
      const wanted = url.searchParams.get(key);
      if (wanted !== null && [...select.options].some((o) => o.value === wanted)) select.value = wanted;
      select.addEventListener("change", () => {
        const here = new URL(window.location.href);
        const newest = select.options[select.options.length - 1].value;
        if (select.value === newest) here.searchParams.delete(key);
        else here.searchParams.set(key, select.value);
        history.replaceState(null, "", here);
        render();
      });
    }
    form.addEventListener("change", (ev) => {
      if (ev.target.name === "metric" || ev.target.name === "order") {  // drawn here, no reload
        const url = new URL(window.location.href);
        url.searchParams.set(ev.target.name, ev.target.value);
        history.replaceState(null, "", url);
        render();
      } else {
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", () => {
      for (const el of form.elements) if (el.name && !el.value) el.disabled = true;  // short URLs
      for (const [key, value] of new URL(window.location.href).searchParams) {
        if (!key.startsWith("step.") || form.elements[key]) continue;
        const kept = document.createElement("input");  // the runs' checkpoints ride along
        Object.assign(kept, { type: "hidden", name: key, value: value });
        form.appendChild(kept);
      }
    });
    render();
  });
})();
