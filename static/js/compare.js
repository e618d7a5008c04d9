// Side-by-side page: keyboard control and autosave of each choice. The server is the authority
// (work/comparisons.py checks every label); this only makes eleven choices fast.
(function () {
  "use strict";
  const form = document.getElementById("compare-form");
  if (!form) return;
  const readonly = form.dataset.readonly === "1";
  // As on the rubric page, the columns beside each other end at the viewport's bottom; on narrow
  // screens the responses stay on top and the progress line and criteria go just below them
  // (static/css/app.css).
  const layout = document.getElementById("compare-layout");
  const source = document.getElementById("source-col");
  function fitLayout() {
    if (!layout) return;
    layout.style.setProperty("--layout-top", (layout.getBoundingClientRect().top + window.scrollY) + "px");
    if (source) layout.style.setProperty("--source-height", source.offsetHeight + "px");
  }
  fitLayout();
  window.addEventListener("resize", fitLayout);
  if (source && window.ResizeObserver) new ResizeObserver(fitLayout).observe(source);
  const blocks = Array.from(form.querySelectorAll("fieldset.criterion"));
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const keyInput = form.querySelector("input[name=submission_key]");
  keyInput.value = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Date.now()) + Math.random();
  const started = Date.now();
  const dialog = document.getElementById("guidelines");
  const T = document.documentElement.lang === "en"
    ? { saved: "Draft saved", failed: "Not saved", refuse: "Refuse this pair? It goes to another expert." }
    : { saved: "Черновик сохранён", failed: "Не сохранено", refuse: "Отказаться от этой пары? Она уйдёт другому эксперту." };
  let active = 0;

  function activate(i, scroll = true) {
    if (!blocks.length) return;
    active = Math.max(0, Math.min(blocks.length - 1, i));
    blocks.forEach((b, j) => b.classList.toggle("active", j === active));
    const b = blocks[active];
    if (scroll) b.scrollIntoView({ block: "nearest" });
    const checked = b.querySelector("input[type=radio]:checked") || b.querySelector("input[type=radio]");
    if (checked) checked.focus({ preventScroll: true }); else b.focus({ preventScroll: true });
  }
  // "Labelled 3 of 11": criteria with a chosen option (the server counts the same way for the
  // first render: work.views_compare.compare_page); the line is aria-live.
  const progressDone = document.getElementById("progress-done");
  function updateProgress() {
    if (!progressDone) return;
    progressDone.textContent = String(blocks.filter((b) => b.querySelector("input[type=radio]:checked")).length);
  }
  function save(block, input) {
    if (readonly) return;
    const state = block.querySelector(".saved-state");
    const body = new URLSearchParams({ criterion: block.dataset.key, label: input.value });
    fetch(form.dataset.draftUrl, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-CSRFToken": csrf, "Content-Type": "application/x-www-form-urlencoded" },
    }).then((r) => r.text().then((t) => { state.textContent = r.ok ? T.saved : (T.failed + ": " + t); }))
      .catch(() => { state.textContent = T.failed; });
  }
  blocks.forEach((block, i) => {
    block.addEventListener("focusin", () => {
      active = i;
      blocks.forEach((b, j) => b.classList.toggle("active", j === i));
    });
    block.querySelectorAll("input[type=radio]").forEach((input) => {
      input.addEventListener("change", () => { updateProgress(); save(block, input); });
    });
  });
  document.addEventListener("keydown", (e) => {
    const inText = e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLInputElement && e.target.type === "text";
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      if (!readonly) form.requestSubmit(document.getElementById("save-compare"));
      return;
    }
    if (inText || e.altKey || e.ctrlKey || e.metaKey || (dialog && dialog.open)) return;
    if (e.key >= "1" && e.key <= "4" && !readonly) {
      const inputs = blocks[active].querySelectorAll("input[type=radio]");
      const input = inputs[parseInt(e.key, 10) - 1];
      if (input) {
        e.preventDefault();
        input.checked = true;
        input.dispatchEvent(new Event("change", { bubbles: true }));
        activate(active + 1 < blocks.length ? active + 1 : active);
      }
    } else if (e.key === "j" || e.key === "J" || e.key === "о" || e.key === "О") {
      e.preventDefault(); activate(active + 1);
    } else if (e.key === "k" || e.key === "K" || e.key === "л" || e.key === "Л") {
      e.preventDefault(); activate(active - 1);
    } else if ((e.key === "g" || e.key === "G" || e.key === "п" || e.key === "П") && dialog) {
      e.preventDefault(); dialog.showModal();
    }
  });
  const open = document.getElementById("open-guidelines");
  if (open && dialog) open.addEventListener("click", () => dialog.showModal());
  const refuse = document.getElementById("refuse-form");
  if (refuse) refuse.addEventListener("submit", (e) => { if (!window.confirm(T.refuse)) e.preventDefault(); });
  form.addEventListener("submit", () => {
    form.querySelector("input[name=time_total]").value = String(Date.now() - started);
  });
  updateProgress();
  // After a reload the work goes on where it stopped: the first criterion without a label (the
  // choices are kept as drafts on the server); the page stays at its top when that is the first.
  const first = blocks.findIndex((b) => !b.querySelector("input[type=radio]:checked"));
  activate(first < 0 ? 0 : first, first > 0);
})();
