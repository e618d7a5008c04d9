// Review queues by keyboard (console): the queue page and the answer review page.
// Queue page: j / k (or ArrowDown / ArrowUp) move the selection, Enter opens the row's review page.
// Review page: n / p (or ] / [) go to the next / previous item of the queue it was opened from
// (plain links the server rendered, so they work without this script too); j / k select an
// estimate; a accepts it, s opens its send-back form with the cursor in the comment.
// Keys typed into a field are the field's. Russian layout keys are accepted, as on the scoring page.
(function () {
  "use strict";

  function typing(e) {
    return e.target.closest && e.target.closest("input, textarea, select, [contenteditable]");
  }
  // The same physical key on the Russian layout (ЙЦУКЕН), as static/js/scoring.js accepts.
  const RU = { "о": "j", "л": "k", "т": "n", "з": "p", "ф": "a", "ы": "s", "х": "[", "ъ": "]" };
  function key(e) {
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    return RU[k] || k;
  }

  // --- The queue page -----------------------------------------------------------------------
  const table = document.getElementById("review-queue");
  if (table) {
    const rows = Array.from(table.querySelectorAll("tbody tr.queue-row"));
    let current = -1;
    function select(i) {
      if (!rows.length) return;
      current = Math.max(0, Math.min(rows.length - 1, i));
      rows.forEach((r, j) => { r.classList.toggle("selected", j === current); r.setAttribute("aria-selected", j === current ? "true" : "false"); });
      rows[current].scrollIntoView({ block: "nearest" });
    }
    function open(i) {
      const link = rows[i] && rows[i].querySelector("a.open");
      if (link) location.assign(link.href);
    }
    rows.forEach((r, i) => r.addEventListener("click", (e) => { if (!e.target.closest("a")) { select(i); open(i); } }));
    document.addEventListener("keydown", (e) => {
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
      const k = key(e);
      if (k === "j" || k === "ArrowDown") { e.preventDefault(); select(current + 1); return; }
      if (k === "k" || k === "ArrowUp") { e.preventDefault(); select(current < 0 ? 0 : current - 1); return; }
      if (k === "Enter" && current >= 0) { e.preventDefault(); open(current); }
    });
    return;
  }

  // --- The answer review page -----------------------------------------------------------------
  const nav = document.getElementById("queue-nav");
  const cells = Array.from(document.querySelectorAll(".review-cell[data-reviewable]"));
  let chosen = cells.findIndex((c) => c.classList.contains("selected"));
  if (chosen < 0 && nav && location.hash) {
    // The row was about a criterion: its first reviewable estimate.
    const row = document.getElementById(location.hash.slice(1));
    const first = row ? row.querySelector(".review-cell[data-reviewable]") : null;
    chosen = first ? cells.indexOf(first) : -1;
  }
  if (chosen < 0 && cells.length) chosen = 0;
  function mark(i, scroll) {
    if (!cells.length) return;
    chosen = Math.max(0, Math.min(cells.length - 1, i));
    cells.forEach((c, j) => c.classList.toggle("selected", j === chosen));
    if (scroll) cells[chosen].scrollIntoView({ block: "nearest" });
  }
  mark(chosen, false);
  function go(id) {
    const link = document.getElementById(id);
    if (link) location.assign(link.href);
  }
  document.addEventListener("keydown", (e) => {
    if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = key(e);
    if (k === "n" || k === "]") { e.preventDefault(); go("queue-next"); return; }
    if (k === "p" || k === "[") { e.preventDefault(); go("queue-prev"); return; }
    if (k === "j") { e.preventDefault(); mark(chosen + 1, true); return; }
    if (k === "k") { e.preventDefault(); mark(chosen - 1, true); return; }
    const cell = cells[chosen];
    if (!cell) return;
    if (k === "a") {
      const button = cell.querySelector("button.accept");
      if (button) { e.preventDefault(); button.form.requestSubmit(button); }
      return;
    }
    if (k === "s") {
      const details = cell.querySelector("details");
      const comment = cell.querySelector("textarea[name=comment]");
      if (details && comment) { e.preventDefault(); details.open = true; comment.focus(); }
    }
  });
})();
