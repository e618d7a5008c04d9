// Scoring page: keyboard control, draft autosave, rationale checks mirrored from the server
// (protocol/rationale.py is the authority; this only gives quick feedback).
(function () {
  "use strict";
  const form = document.getElementById("scoring-form");
  if (!form) return;
  const readonly = form.dataset.readonly === "1";
  // The columns beside each other end at the viewport's bottom (static/css/app.css).
  const layout = document.querySelector(".scoring-layout");
  function fitLayout() {
    if (layout) layout.style.setProperty("--layout-top", (layout.getBoundingClientRect().top + window.scrollY) + "px");
  }
  fitLayout();
  window.addEventListener("resize", fitLayout);
  const blocks = Array.from(form.querySelectorAll("fieldset.criterion"));
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const keyInput = form.querySelector("input[name=submission_key]");
  keyInput.value = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Date.now()) + Math.random();
  const started = Date.now();
  let active = 0;
  let activeSince = Date.now();
  // The rationale rule's parameters and messages, from the server (RationaleRule.for_client).
  const RULE = JSON.parse(document.getElementById("rationale-rule").textContent);
  const T = document.documentElement.lang === "en"
    ? { saved: "Draft saved", failed: "Not saved" }
    : { saved: "Черновик сохранён", failed: "Не сохранено" };

  function chosen(block) {
    const r = block.querySelector("input[type=radio]:checked");
    return r ? r.value : "";
  }
  function textarea(block) { return block.querySelector("textarea"); }
  function accrueTime() {
    const now = Date.now();
    const b = blocks[active];
    if (b) {
      const t = b.querySelector("input[name^=time_]");
      t.value = String((parseInt(t.value, 10) || 0) + (now - activeSince));
    }
    activeSince = now;
  }
  function activate(i, focusText, scroll = true) {
    if (!blocks.length) return;
    i = Math.max(0, Math.min(blocks.length - 1, i));
    accrueTime();
    blocks.forEach((b, j) => b.classList.toggle("active", j === i));
    active = i;
    const b = blocks[i];
    if (scroll) b.scrollIntoView({ block: "nearest", behavior: "smooth" });
    if (focusText) textarea(b).focus(); else b.focus({ preventScroll: true });
  }
  function criticalStop() {
    return blocks.some((b) => b.dataset.group === "critical" && chosen(b) !== "" && chosen(b) !== "na" &&
      parseInt(chosen(b), 10) === parseInt(b.dataset.criticalMax, 10));
  }
  function markSkipped() {
    const stop = criticalStop();
    blocks.forEach((b) => { if (b.dataset.group !== "critical") b.classList.toggle("skipped", stop); });
    updateProgress(stop);
  }
  // "4 of 8 criteria": scored or N/A, and after a critical violation the skipped rest (the
  // server counts the same way for the first render: work.views._progress_done).
  const progressDone = document.getElementById("progress-done");
  function updateProgress(stop) {
    if (!progressDone) return;
    const done = blocks.filter((b) => chosen(b) !== "" || (stop && b.dataset.group !== "critical")).length;
    progressDone.textContent = String(done);
  }
  function check(block) {
    // Which score is best (a one-word rationale allowed) is the criterion's: 0 on critical gates.
    return PolluxRationale.errors(textarea(block).value, chosen(block), block.dataset.best, RULE);
  }
  function showErrors(block, errs) {
    const box = block.querySelector(".field-error");
    box.textContent = "";
    errs.forEach((e) => { const d = document.createElement("div"); d.textContent = e; box.appendChild(d); });
  }
  const timers = new Map();
  function saveDraft(block) {
    if (readonly) return;
    clearTimeout(timers.get(block));
    timers.set(block, setTimeout(() => {
      accrueTime();
      const id = block.dataset.triple;
      const body = new URLSearchParams();
      body.set("triple", id);
      body.set("score_" + id, chosen(block));
      body.set("rationale_" + id, textarea(block).value);
      body.set("time_" + id, block.querySelector("input[name^=time_]").value);
      const state = block.querySelector(".saved-state");
      fetch(form.dataset.draftUrl, { method: "POST", body, headers: { "X-CSRFToken": csrf }, credentials: "same-origin" })
        .then((r) => r.text().then((t) => { state.textContent = r.ok ? T.saved : (T.failed + ": " + t); if (!r.ok) keepLocal(); }))
        .catch(() => { state.textContent = T.failed; keepLocal(); });
    }, 600));
  }

  blocks.forEach((block, i) => {
    block.addEventListener("focusin", () => { if (active !== i) activate(i, false); });
    block.addEventListener("click", () => { if (active !== i) activate(i, false); });
    block.querySelectorAll("input[type=radio]").forEach((r) => r.addEventListener("change", () => {
      block.querySelectorAll(".scores label").forEach((l) => l.classList.toggle("chosen", l.contains(r)));
      markSkipped();
      saveDraft(block);
    }));
    textarea(block).addEventListener("input", () => saveDraft(block));
    textarea(block).addEventListener("blur", () => { if (textarea(block).value.trim()) showErrors(block, check(block)); });
  });

  function pick(value) {
    const block = blocks[active];
    const radio = block && Array.from(block.querySelectorAll("input[type=radio]")).find((r) => r.value === value);
    if (!radio || radio.disabled) return false;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    textarea(block).focus();
    return true;
  }

  document.addEventListener("keydown", (e) => {
    if (e.target.closest && e.target.closest("#flag-form")) return;  // the skip/flag form's own fields
    const typing = e.target.closest && e.target.closest("textarea, input[type=text], select");
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") { e.preventDefault(); form.requestSubmit(document.getElementById("submit-scores")); return; }
    // Alt+arrows leave the text field, so the next digit picks a score.
    if (e.altKey && (e.key === "ArrowDown" || e.key === "ArrowUp")) { e.preventDefault(); if (typing) e.target.blur(); activate(active + (e.key === "ArrowDown" ? 1 : -1), false); return; }
    if (e.key === "Escape" && typing) { e.target.blur(); blocks[active].focus(); return; }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (/^[0-9]$/.test(e.key)) { if (pick(e.key)) e.preventDefault(); return; }
    const k = e.key.toLowerCase();
    if (k === "n" || k === "т") { if (pick("na")) e.preventDefault(); return; }
    if (k === "j" || k === "о") { e.preventDefault(); activate(active + 1, false); return; }
    if (k === "k" || k === "л") { e.preventDefault(); activate(active - 1, false); return; }
    // Skip or flag: the form opens with its reason list focused (choose with the arrows, Tab to
    // the buttons).
    if (k === "f" || k === "а") {
      const panel = document.getElementById("skip-flag");
      if (panel) { e.preventDefault(); panel.open = true; document.getElementById("flag-reason").focus(); }
      return;
    }
    if (e.key === "Enter") { e.preventDefault(); textarea(blocks[active]).focus(); }
  });

  let sending = false;
  form.addEventListener("submit", (e) => {
    if (sending) { e.preventDefault(); return; }
    accrueTime();
    form.querySelector("input[name=time_total]").value = String(Date.now() - started);
    const stop = criticalStop();
    let first = -1;
    blocks.forEach((b, i) => {
      const skip = stop && b.dataset.group !== "critical";
      const errs = skip ? [] : check(b);
      showErrors(b, errs);
      if (errs.length && first < 0) first = i;
    });
    if (first >= 0) { e.preventDefault(); activate(first, true); return; }
    sending = true;  // one request per click; the server is idempotent anyway
  });
  // --- A failed submission never loses what the expert typed -----------------------------
  // The form is sent with fetch: on success (the server's redirect) the local copy is dropped
  // and the browser goes on; on a network error, a 5xx or a 409 the page stays as it is with a
  // message, and a copy of the form stays in localStorage until the server confirms, so even a
  // reload or a crashed tab restores it.
  const LOCAL_KEY = "pollux:unsent:" + new URL(form.action, location.href).pathname;
  const S = document.documentElement.lang === "en"
    ? { network: "Not sent: no connection to the server. Your text is kept here and in this browser; try again.",
        server: "Not sent: the server failed (HTTP {status}). Your text is kept here and in this browser; try again.",
        closed: "Not sent: {reason} Your text is kept in this browser.",
        restored: "Restored the text you typed in this browser but had not sent yet. Check it and submit." }
    : { network: "Не отправлено: нет связи с сервером. Текст сохранён здесь и в этом браузере; попробуйте ещё раз.",
        server: "Не отправлено: ошибка сервера (HTTP {status}). Текст сохранён здесь и в этом браузере; попробуйте ещё раз.",
        closed: "Не отправлено: {reason} Текст сохранён в этом браузере.",
        restored: "Восстановлен текст, набранный в этом браузере, но ещё не отправленный. Проверьте его и отправьте." };

  function formSnapshot() {
    const fields = {};
    blocks.forEach((b) => {
      const id = b.dataset.triple;
      fields["score_" + id] = chosen(b);
      fields["rationale_" + id] = textarea(b).value;
    });
    return fields;
  }
  function keepLocal() {
    if (readonly) return;
    try { localStorage.setItem(LOCAL_KEY, JSON.stringify({ at: Date.now(), fields: formSnapshot() })); } catch (err) { /* storage full or off */ }
  }
  function dropLocal() {
    try { localStorage.removeItem(LOCAL_KEY); } catch (err) { /* storage off */ }
  }
  function showSubmitNotice(text, isError) {
    let box = document.getElementById("submit-notice");
    if (!box) {
      box = document.createElement("div");
      box.id = "submit-notice";
      box.setAttribute("role", "alert");
      form.insertBefore(box, form.firstChild);
    }
    box.className = "card " + (isError ? "error submit-failed" : "muted");
    box.textContent = text;
    box.scrollIntoView({ block: "nearest" });
  }
  function restoreLocal() {
    if (readonly) return;
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(LOCAL_KEY) || "null"); } catch (err) { saved = null; }
    if (!saved || !saved.fields) return;
    let changed = false;
    blocks.forEach((b) => {
      const id = b.dataset.triple;
      const text = saved.fields["rationale_" + id];
      if (typeof text === "string" && text.trim() && text !== textarea(b).value) { textarea(b).value = text; changed = true; }
      const score = saved.fields["score_" + id];
      const radio = score ? Array.from(b.querySelectorAll("input[type=radio]")).find((r) => r.value === score && !r.disabled) : null;
      if (radio && !radio.checked) {
        radio.checked = true;
        b.querySelectorAll(".scores label").forEach((l) => l.classList.toggle("chosen", l.contains(radio)));
        changed = true;
      }
    });
    if (changed) showSubmitNotice(S.restored, false);
  }
  function submitByFetch(e) {
    if (e.defaultPrevented || readonly) return;  // the checks above stopped it
    e.preventDefault();
    keepLocal();
    const body = new FormData(form);
    const stay = e.submitter && e.submitter.name === "then" && e.submitter.value === "stay";
    if (stay) body.set("then", "stay");
    fetch(form.action, { method: "POST", body, credentials: "same-origin", redirect: "manual" })
      .then((r) => {
        // The server redirects only after a durable submission.
        if (r.type === "opaqueredirect" || (r.status >= 300 && r.status < 400)) {
          dropLocal();
          location.assign(stay ? form.action : (form.dataset.nextUrl || form.action));
          return;
        }
        if (r.status === 422) { form.submit(); return; }  // rejected scores: the server's page shows why
        return r.text().then((html) => {
          sending = false;
          if (r.status === 409) {
            const doc = new DOMParser().parseFromString(html, "text/html");
            const reason = doc.getElementById("closed-reason");
            showSubmitNotice(S.closed.replace("{reason}", reason ? reason.textContent.trim() : ""), true);
          } else {
            showSubmitNotice(S.server.replace("{status}", String(r.status)), true);
          }
        });
      })
      .catch(() => { sending = false; showSubmitNotice(S.network, true); });
  }
  form.addEventListener("submit", submitByFetch);
  restoreLocal();

  markSkipped();
  // On load the page stays at its top: the instruction comes first, the criteria below it.
  activate(0, false, false);
})();
