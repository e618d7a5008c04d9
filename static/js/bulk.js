// The data browser's bulk actions (console/templates/console/browser.html, "experts' work"):
// the "Selected: N" count, "select all on this page", and the keyboard: Space toggles the
// focused row's checkbox, ArrowDown / ArrowUp (or j / k) move between rows. The form is a plain
// POST without this script. Handlers are on the document: htmx swaps the results in as the
// filters change, and the count is recomputed after each swap.
(function () {
  "use strict";

  const RU = { "о": "j", "л": "k" };
  function rows() { return Array.from(document.querySelectorAll("#bulk-table tbody tr.bulk-row")); }
  function box(row) { return row.querySelector("input[name=ids]"); }

  function update() {
    const count = document.getElementById("bulk-count");
    if (!count) return;
    const all = rows();
    const n = all.filter((r) => box(r).checked).length;
    all.forEach((r) => r.classList.toggle("checked", box(r).checked));
    count.textContent = count.dataset.template.replace("N", String(n));
    const head = document.getElementById("bulk-all");
    if (head) {
      head.checked = all.length > 0 && n === all.length;
      head.indeterminate = n > 0 && n < all.length;
    }
  }

  document.addEventListener("change", (e) => {
    if (e.target.id === "bulk-all") {
      rows().forEach((r) => { box(r).checked = e.target.checked; });
    }
    if (e.target.id === "bulk-all" || e.target.name === "ids") update();
  });

  document.addEventListener("click", (e) => {
    // A click on a row's cell (not a link or the box itself) toggles it, as Space does.
    const row = e.target.closest && e.target.closest("tr.bulk-row");
    if (!row || e.target.closest("a, input, button, label")) return;
    box(row).checked = !box(row).checked;
    update();
  });

  document.addEventListener("keydown", (e) => {
    const row = e.target.closest && e.target.closest("tr.bulk-row");
    if (!row || e.target !== row || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.length === 1 ? (RU[e.key.toLowerCase()] || e.key.toLowerCase()) : e.key;
    const all = rows();
    const i = all.indexOf(row);
    if (k === " ") {
      e.preventDefault();  // not a page scroll
      box(row).checked = !box(row).checked;
      update();
    } else if ((k === "ArrowDown" || k === "j") && i < all.length - 1) {
      e.preventDefault();
      all[i + 1].focus();
    } else if ((k === "ArrowUp" || k === "k") && i > 0) {
      e.preventDefault();
      all[i - 1].focus();
    }
  });

  document.addEventListener("htmx:afterSwap", update);
  update();
})();
