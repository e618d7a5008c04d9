// The comment threads of a work page (discussion/_boxes.html): C (С on the Russian layout) opens
// the comment box, Ctrl+Enter inside it posts the comment instead of the page's own Ctrl+Enter
// (which submits the scores). Listens in the capture phase, before the page's keys.
(function () {
  "use strict";
  function typing(e) {
    return e.target.closest && e.target.closest("input, textarea, select, [contenteditable]");
  }
  function boxToOpen() {
    // The review page: the thread of the expert whose estimate is selected (j / k), else the first.
    const selected = document.querySelector(".review-cell.selected[data-code]");
    const boxes = Array.from(document.querySelectorAll("[data-comment-box]"));
    if (selected) {
      const own = boxes.find((b) => b.closest("[data-thread-box]").querySelector("h2").textContent.includes(selected.dataset.code));
      if (own) return own;
    }
    return boxes[0];
  }
  document.addEventListener("keydown", (e) => {
    const box = e.target.closest && e.target.closest("[data-comment-box]");
    if (box && (e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      e.stopImmediatePropagation();
      box.form.requestSubmit();
      return;
    }
    if (box && e.key === "Escape") {
      e.stopImmediatePropagation();
      box.blur();
      return;
    }
    if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    if (k !== "c" && k !== "с") return;
    const target = boxToOpen();
    if (!target) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    const folded = target.closest("details");
    if (folded) folded.open = true;
    target.scrollIntoView({ block: "center" });
    target.focus();
  }, true);
  // A refused comment (400: empty, too long) comes back with the form and the error naming the
  // field: shown in place of the thread like a success, its text kept.
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const t = e.detail.target;
    if (e.detail.xhr.status === 400 && t && t.matches && t.matches("[data-thread]")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  // After posting by keyboard the new box has the focus again, for the next comment.
  document.body.addEventListener("htmx:afterSwap", (e) => {
    const t = e.detail.target;
    if (!t || !t.id || !t.id.startsWith("thread-")) return;
    const fresh = document.getElementById(t.id);
    const box = fresh && fresh.querySelector("[data-comment-box]");
    if (box && e.detail.requestConfig && e.detail.requestConfig.verb === "post") box.focus();
  });
})();
