// The keyboard help of a work page: "?" (Shift+/, or Shift+7 on the Russian layout: the key that
// types "?") opens the page's list of keys in a dialog, Esc or "?" again closes it. A page lists
// its keys in `{% block keyhelp %}` (templates/base.html); a page without any has no dialog.
(function () {
  "use strict";
  const dialog = document.getElementById("keyhelp");
  if (!dialog || !dialog.querySelector("dt")) return;
  // A radio button or a checkbox takes no characters: the side-by-side page keeps the focus on
  // the active criterion's radio buttons, and "?" must open the list there too.
  function typing(e) {
    return e.target.closest && e.target.closest(
      "input:not([type=radio]):not([type=checkbox]), textarea, select, [contenteditable]");
  }
  function toggle() {
    if (dialog.open) dialog.close(); else dialog.showModal();
  }
  document.addEventListener("keydown", (e) => {
    if (e.key !== "?" || e.ctrlKey || e.metaKey || e.altKey || typing(e)) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    toggle();
  }, true);
  document.querySelectorAll("[data-keyhelp-open]").forEach((b) => b.addEventListener("click", (e) => {
    e.preventDefault();
    toggle();
  }));
  dialog.querySelector("[data-keyhelp-close]").addEventListener("click", () => dialog.close());
})();
