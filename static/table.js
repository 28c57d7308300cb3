// Click a header of a table.sortable to sort by that column (numbers by data-value when present).
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.sortable")) {
    const headers = table.tHead.rows[0].cells;
    Array.from(headers).forEach((th, col) => {
      th.tabIndex = 0;
      th.addEventListener("click", () => {
        const body = table.tBodies[0];
        const dir = th.dataset.dir === "desc" ? "asc" : "desc";
        for (const h of headers) delete h.dataset.dir;
        th.dataset.dir = dir;
        const text = th.dataset.type === "text";
        const key = (row) => {
          const cell = row.cells[col];
          if (text) return cell.textContent.trim().toLowerCase();
          const v = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent;
          return parseFloat(v);
        };
        const rows = Array.from(body.rows);
        rows.sort((a, b) => {
          const x = key(a), y = key(b);
          const cmp = text ? x.localeCompare(y) : x - y;
          return dir === "asc" ? cmp : -cmp;
        });
        for (const r of rows) body.appendChild(r);
      });
    });
  }
});
