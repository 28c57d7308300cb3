// Keyboard reach: Enter on a focused element that opens something on click (a drill-down row,
// a sortable column's header) does what a click does. Rows and headers carry tabindex="0".
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || event.defaultPrevented) return;
  const target = event.target;
  if (target instanceof Element && target.matches("tr[tabindex][hx-get], th[tabindex]")) {
    event.preventDefault();
    target.click();
  }
});
