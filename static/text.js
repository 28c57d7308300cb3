// Plotly draws a pseudo-HTML subset (<a href>, <b>, <i>, <br>, <sup>, ...) in every text it
// renders: axis ticks, hovers, legends, annotations. Names, labels, benchmarks and categories come
// from users, so every chart passes them through plotlyText first: Plotly turns the entities back
// into the literal characters, and nothing in them becomes a link or a style.
window.plotlyText = function (value) {
  if (value === null || value === undefined) return "";
  return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
};
