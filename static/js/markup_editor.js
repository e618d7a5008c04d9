// The span markup page (markup/mark.html): select a span by mouse or keyboard, give it a code
// from the subject's classifier, keep the fragments in the contest JSON's "selections" shape,
// autosave drafts (server first, this browser's storage when the server cannot be reached),
// undo, and submit. Offsets are 0-based, end-exclusive character offsets into the text.
(function () {
  "use strict";
  const dataNode = document.getElementById("markup-data");
  if (!dataNode) return;
  const page = JSON.parse(dataNode.textContent);
  const msg = document.getElementById("markup-messages").dataset;
  const text = page.text;
  const box = document.getElementById("markup-text");
  const list = document.getElementById("fragment-list");
  const form = document.getElementById("fragment-form");
  const codeInput = document.getElementById("fragment-code");
  const codeName = document.getElementById("fragment-code-name");
  const subtypeSelect = document.getElementById("fragment-subtype");
  const field = (name) => document.getElementById("fragment-" + name);
  const quote = document.getElementById("fragment-quote");
  const statusLine = document.getElementById("markup-status");
  const errorsBox = document.getElementById("markup-errors");
  const storageKey = "pollux-markup-" + page.draft_url;
  const tokenInput = document.querySelector("#fragment-form [name=csrfmiddlewaretoken]");
  const csrf = tokenInput ? tokenInput.value : "";
  const started = Date.now();

  // Codes are case-insensitive and Latin P is Cyrillic Р (protocol.spans.normalize_code).
  const norm = (code) => code.trim().replace(/^[Pp]/, "Р").toLowerCase().replace(/\s+/g, "");
  const byCode = new Map(page.classifier.map((c) => [norm(c.code), c]));
  const datalist = document.getElementById("markup-codes");
  for (const c of page.classifier) {
    const option = document.createElement("option");
    option.value = c.code;
    option.label = c.name;
    datalist.appendChild(option);
  }

  // The server counts offsets in code points (Python strings); the DOM and String.slice in UTF-16
  // units. Fragments live here in UTF-16 and cross the boundary through these two maps, so an
  // emoji before a span does not shift it.
  const cpToU16 = [0];
  const u16ToCp = new Array(text.length + 1).fill(0);
  {
    let unit = 0, point = 0;
    for (const ch of text) {
      for (let k = 0; k < ch.length; k++) u16ToCp[unit + k] = point;
      unit += ch.length;
      point += 1;
      cpToU16.push(unit);
      u16ToCp[unit] = point;
    }
  }
  const toU16 = (offset) => (offset === null ? null : cpToU16[offset] ?? text.length);
  const toCp = (offset) => (offset === null ? null : u16ToCp[offset]);

  // Words: letters and digits, with inner hyphens or apostrophes (the snapping unit).
  const words = [];
  for (const m of text.matchAll(/[\p{L}\p{N}]+(?:[-'’][\p{L}\p{N}]+)*/gu)) {
    words.push([m.index, m.index + m[0].length]);
  }

  let fragments = (page.selections || []).map(normalise);
  let undoStack = [];
  let pending = null; // {start, end} or {start: null, end: null} for a whole-text error
  let editing = -1; // the index being edited, or -1 for a new fragment
  let cursor = -1; // the keyboard's word index
  let anchor = -1; // the word where a keyboard selection began
  let dirty = false;
  let saveTimer = null;
  let submitKey = null;

  let version = page.version;
  const local = readLocal();
  if (page.editable && local && local.selections && local.version !== page.version) {
    window.localStorage.removeItem(storageKey); // made on an older draft: the server's is newer
  } else if (page.editable && local && local.selections) {
    fragments = local.selections.map(normalise);
    for (const [name, value] of Object.entries(local.criteria || {})) {
      const select = document.querySelector('.criterion-score[data-name="' + name + '"]');
      if (select) select.value = String(value);
    }
    for (const [name, value] of Object.entries(local.rationales || {})) {
      const input = document.querySelector('.criterion-rationale[data-name="' + name + '"]');
      if (input) input.value = value;
    }
    dirty = true;
  }

  // A fragment as the server sends it (code points) → as the page keeps it (UTF-16).
  function normalise(s) {
    return {
      startSelection: toU16(s.startSelection ?? null),
      endSelection: toU16(s.endSelection ?? null),
      type: s.type || "",
      subtype: s.subtype || "",
      comment: s.comment || "",
      explanation: s.explanation || "",
      correction: s.correction || "",
      tag: s.tag || "",
      group: s.group || "error",
    };
  }

  // The page's fragments as the server takes them (code points).
  function wire() {
    return fragments.map((f) => ({ ...f, startSelection: toCp(f.startSelection), endSelection: toCp(f.endSelection) }));
  }

  function readLocal() {
    try {
      return JSON.parse(window.localStorage.getItem(storageKey) || "null");
    } catch (e) {
      return null;
    }
  }

  function sortFragments() {
    // Whole-text errors last; spans by start, the longer first (the enclosing one first).
    fragments.sort((a, b) => {
      const wa = a.startSelection === null, wb = b.startSelection === null;
      if (wa !== wb) return wa ? 1 : -1;
      if (wa) return 0;
      return a.startSelection - b.startSelection || b.endSelection - a.endSelection;
    });
  }

  function kindOf(f) {
    if (norm(f.type) === norm("ИСП")) return "fix";
    return f.group === "meaning" ? "meaning" : "error";
  }

  function segmentClass(covering) {
    if (!covering.length) return "";
    const kinds = new Set(covering.map(kindOf));
    let cls = "seg";
    if (kinds.has("error") && kinds.has("meaning")) cls += " seg-both";
    else if (kinds.has("meaning")) cls += " seg-meaning";
    else if (kinds.has("error")) cls += " seg-error";
    else cls += " seg-fix";
    if (covering.length > 1) cls += " seg-nested";
    if (covering.some((f) => f.tag)) cls += " seg-tagged";
    return cls;
  }

  function render() {
    sortFragments();
    const located = fragments.filter((f) => f.startSelection !== null);
    const points = new Set([0, text.length]);
    for (const f of located) {
      points.add(f.startSelection);
      points.add(f.endSelection);
    }
    if (pending && pending.start !== null) {
      points.add(pending.start);
      points.add(pending.end);
    }
    const sorted = [...points].sort((a, b) => a - b);
    box.textContent = "";
    for (let i = 0; i + 1 < sorted.length; i++) {
      const a = sorted[i], b = sorted[i + 1];
      const covering = located.filter((f) => f.startSelection <= a && f.endSelection >= b);
      const el = document.createElement(covering.length ? "mark" : "span");
      el.dataset.s = String(a);
      el.className = segmentClass(covering);
      if (pending && pending.start !== null && pending.start <= a && pending.end >= b) {
        el.classList.add("seg-pending");
      }
      if (covering.length) {
        el.title = covering.map((f) => label(f)).join("\n");
        el.dataset.fragments = covering.map((f) => fragments.indexOf(f)).join(",");
      }
      el.textContent = text.slice(a, b);
      box.appendChild(el);
    }
    renderList();
  }

  function label(f) {
    let out = f.type + (f.subtype ? "." + f.subtype : "");
    if (f.comment) out += " " + f.comment;
    if (f.correction) out += " → " + f.correction;
    if (f.tag) out += " #" + f.tag;
    return out;
  }

  function renderList() {
    list.textContent = "";
    document.getElementById("fragment-count").textContent = String(fragments.length);
    fragments.forEach((f, i) => {
      const li = document.createElement("li");
      li.className = "markup-item markup-item-" + kindOf(f);
      li.dataset.index = String(i);
      const head = document.createElement("b");
      head.textContent = label(f);
      li.appendChild(head);
      const where = document.createElement("div");
      where.className = "muted";
      where.textContent = f.startSelection === null
        ? "(" + msg.whole + ")"
        : "«" + text.slice(f.startSelection, f.endSelection) + "» " + toCp(f.startSelection) + "–" + toCp(f.endSelection);
      li.appendChild(where);
      if (f.explanation) {
        const ex = document.createElement("div");
        ex.textContent = f.explanation;
        li.appendChild(ex);
      }
      if (page.editable) {
        const edit = document.createElement("button");
        edit.type = "button";
        edit.className = "secondary fragment-edit";
        edit.textContent = msg.edit;
        edit.addEventListener("click", () => startEdit(i));
        const del = document.createElement("button");
        del.type = "button";
        del.className = "secondary fragment-delete";
        del.textContent = msg.delete;
        del.addEventListener("click", () => change(() => fragments.splice(i, 1)));
        li.append(" ", edit, " ", del);
      }
      list.appendChild(li);
    });
  }

  // --- selection ---------------------------------------------------------------------------
  function pointOffset(node, offset) {
    if (node.nodeType === Node.TEXT_NODE) {
      const seg = node.parentElement.closest("[data-s]");
      return seg ? Number(seg.dataset.s) + offset : null;
    }
    if (node === box) {
      const child = box.childNodes[offset];
      return child ? Number(child.dataset.s) : text.length;
    }
    const seg = node.closest ? node.closest("[data-s]") : null;
    if (!seg) return null;
    return Number(seg.dataset.s) + (offset === 0 ? 0 : seg.textContent.length);
  }

  function snap(start, end) {
    for (const [s, e] of words) {
      if (s < start && start < e) start = s;
      if (s < end && end < e) end = e;
    }
    while (start < end && /\s/.test(text[start])) start++;
    while (end > start && /\s/.test(text[end - 1])) end--;
    return start < end ? { start, end } : null;
  }

  function setPending(span) {
    pending = span;
    if (!span) {
      quote.textContent = "";
    } else if (span.start === null) {
      quote.textContent = "(" + msg.whole + ")";
    } else {
      quote.textContent = "«" + text.slice(span.start, span.end) + "» " + toCp(span.start) + "–" + toCp(span.end);
    }
    render();
  }

  box.addEventListener("mouseup", () => {
    if (!page.editable) return;
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !box.contains(sel.anchorNode) || !box.contains(sel.focusNode)) {
      return;
    }
    const a = pointOffset(sel.anchorNode, sel.anchorOffset);
    const b = pointOffset(sel.focusNode, sel.focusOffset);
    if (a === null || b === null) return;
    const span = snap(Math.min(a, b), Math.max(a, b));
    sel.removeAllRanges();
    if (!span) return;
    editing = -1;
    setPending(span);
    openForm();
  });

  // A click on marked text lights up every fragment stacked there (one list card each).
  box.addEventListener("click", (event) => {
    const sel = window.getSelection();
    if (sel && !sel.isCollapsed) return;
    const seg = event.target.closest ? event.target.closest("[data-fragments]") : null;
    for (const li of list.querySelectorAll(".markup-item-active")) li.classList.remove("markup-item-active");
    if (!seg) return;
    for (const index of seg.dataset.fragments.split(",")) {
      const li = list.querySelector('[data-index="' + index + '"]');
      if (li) li.classList.add("markup-item-active");
    }
    const first = list.querySelector(".markup-item-active");
    if (first) first.scrollIntoView({ block: "nearest" });
  });

  function wordAt(offset) {
    const i = words.findIndex(([, e]) => e > offset);
    return i < 0 ? words.length - 1 : i;
  }

  box.addEventListener("keydown", (event) => {
    if (!page.editable || !words.length) return;
    if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      event.preventDefault();
      const step = event.key === "ArrowRight" ? 1 : -1;
      if (cursor < 0) {
        cursor = pending && pending.start !== null ? wordAt(pending.start) : 0;
        anchor = cursor;
      } else {
        cursor = Math.max(0, Math.min(words.length - 1, cursor + step));
      }
      if (!event.shiftKey) anchor = cursor;
      else if (cursor < anchor) cursor = anchor; // Shift+← shrinks down to the anchor word
      editing = -1;
      setPending({ start: words[anchor][0], end: words[cursor][1] });
    } else if (event.key === "Enter" && pending) {
      event.preventDefault();
      openForm();
    } else if (event.key === "Escape") {
      cursor = anchor = -1;
      setPending(null);
    }
  });

  // --- the fragment form --------------------------------------------------------------------
  function openForm() {
    codeInput.focus();
    codeInput.select();
  }

  function chosen() {
    return byCode.get(norm(codeInput.value)) || null;
  }

  function fillSubtypes(entry, value) {
    subtypeSelect.textContent = "";
    const none = document.createElement("option");
    none.value = "";
    none.textContent = msg.none;
    subtypeSelect.appendChild(none);
    for (const s of entry ? entry.subtypes : []) {
      const option = document.createElement("option");
      option.value = s.code;
      option.textContent = s.code + " — " + s.comment;
      subtypeSelect.appendChild(option);
    }
    subtypeSelect.value = value || "";
    codeName.textContent = entry ? entry.name + (entry.comment ? " — " + entry.comment : "") : "";
    field("correction").required = Boolean(entry && entry.needs_correction);
  }

  codeInput.addEventListener("input", () => fillSubtypes(chosen(), ""));

  function resetForm() {
    editing = -1;
    for (const name of ["code", "comment", "explanation", "correction", "tag"]) field(name).value = "";
    fillSubtypes(null, "");
    document.getElementById("fragment-add").textContent = msg.addFragment;
  }

  function startEdit(i) {
    const f = fragments[i];
    editing = i;
    codeInput.value = f.type;
    fillSubtypes(chosen(), f.subtype);
    for (const name of ["comment", "explanation", "correction", "tag"]) field(name).value = f[name];
    document.getElementById("fragment-add").textContent = msg.saveFragment;
    pending = { start: f.startSelection, end: f.endSelection };
    setPending(pending);
    openForm();
  }

  function crosses(candidate, skip) {
    if (candidate.startSelection === null) return false;
    const a = candidate.startSelection, b = candidate.endSelection;
    return fragments.some((f, i) => {
      if (i === skip || f.startSelection === null) return false;
      const c = f.startSelection, d = f.endSelection;
      return (a < c && c < b && b < d) || (c < a && a < d && d < b);
    });
  }

  function formError(message) {
    showErrors([message]);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!pending) return formError(msg.noSpan);
    const entry = chosen();
    if (!entry) return formError(msg.unknownCode);
    const correction = field("correction").value.trim();
    if (entry.needs_correction && !correction) return formError(msg.needsCorrection);
    const fragment = {
      startSelection: pending.start,
      endSelection: pending.end,
      type: entry.code,
      subtype: subtypeSelect.value,
      comment: field("comment").value.trim(),
      explanation: field("explanation").value.trim(),
      correction: correction,
      tag: field("tag").value.trim(),
      group: entry.group,
    };
    if (crosses(fragment, editing)) return formError(msg.crossing);
    const at = editing;
    change(() => {
      if (at >= 0) fragments[at] = fragment;
      else fragments.push(fragment);
    });
    resetForm();
    cursor = anchor = -1;
    setPending(null);
    box.focus();
  });

  // Esc anywhere closes what is open: a shown error message, the list's highlighted fragments,
  // and, from within the fragment form, the fragment being entered (back to the text). In the
  // text itself Esc drops the keyboard's selection (the text's own handler).
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    showErrors([]);
    for (const li of list.querySelectorAll(".markup-item-active")) li.classList.remove("markup-item-active");
    if (form.contains(event.target)) {
      resetForm();
      cursor = anchor = -1;
      setPending(null);
      box.focus();
    }
  });
  document.getElementById("fragment-cancel").addEventListener("click", () => {
    resetForm();
    setPending(null);
  });
  document.getElementById("fragment-whole").addEventListener("click", () => {
    editing = -1;
    setPending({ start: null, end: null });
    openForm();
  });

  // --- changes, undo, drafts ------------------------------------------------------------------
  function change(mutate) {
    undoStack.push(JSON.stringify(fragments));
    if (undoStack.length > 200) undoStack.shift();
    mutate();
    // An edit in progress points at a fragment by its index: after any change the index may
    // name another fragment, so the form starts afresh.
    resetForm();
    showErrors([]);
    render();
    scheduleSave();
  }

  function undo() {
    if (!undoStack.length) return;
    fragments = JSON.parse(undoStack.pop());
    resetForm();
    render();
    scheduleSave();
  }

  document.addEventListener("keydown", (event) => {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement
      || event.target instanceof HTMLTextAreaElement;
    if (page.editable && !typing && (event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "z") {
      event.preventDefault();
      undo();
    }
  });
  const undoButton = document.getElementById("markup-undo");
  if (undoButton) undoButton.addEventListener("click", undo);

  function elapsed() {
    return (page.time_ms || 0) + (Date.now() - started);
  }

  function scheduleSave() {
    dirty = true;
    submitKey = null; // a changed markup is a new submission
    keepLocal();
    clearTimeout(saveTimer);
    saveTimer = setTimeout(saveDraft, 800);
  }

  // Criterion scores and rationales beside the markup (essay types with criteria only).
  function criteria() {
    const scores = {}, rationales = {};
    for (const select of document.querySelectorAll(".criterion-score")) {
      if (select.value !== "") scores[select.dataset.name] = Number(select.value);
    }
    for (const input of document.querySelectorAll(".criterion-rationale")) {
      if (input.value.trim()) rationales[input.dataset.name] = input.value;
    }
    return { criteria: scores, rationales: rationales };
  }

  // The formula's values from the markup as the server last saw it; a different score is flagged.
  function showComputed(data) {
    if (!data || !data.computed) return;
    for (const cell of document.querySelectorAll(".criterion-computed")) {
      const name = cell.dataset.name;
      cell.textContent = name in data.computed ? String(data.computed[name]) : "";
      cell.classList.toggle("warning", Boolean(data.differ && name in data.differ));
    }
  }

  // Progress over the criteria: how many are scored and how many have a rationale. After a
  // refused submission the rows still lacking either are marked until they are filled in.
  let checked = false;
  function showProgress() {
    const now = criteria();
    const scored = document.getElementById("criteria-scored");
    const reasoned = document.getElementById("criteria-reasoned");
    if (scored) scored.textContent = String(Object.keys(now.criteria).length);
    if (reasoned) reasoned.textContent = String(Object.keys(now.rationales).length);
    for (const row of document.querySelectorAll("#markup-criteria tr[data-criterion]")) {
      const name = row.dataset.criterion;
      row.classList.toggle("missing", checked && !(name in now.criteria && name in now.rationales));
    }
  }

  for (const el of document.querySelectorAll(".criterion-score, .criterion-rationale")) {
    el.addEventListener(el.tagName === "SELECT" ? "change" : "input", () => {
      showProgress();
      scheduleSave();
    });
  }

  function keepLocal() {
    window.localStorage.setItem(storageKey, JSON.stringify({ selections: wire(), version: version, ...criteria() }));
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body),
    });
  }

  let saving = false;

  // One save in flight at a time (an older one can never land after a newer one); a change made
  // meanwhile is saved right after.
  async function saveDraft() {
    if (!dirty) return;
    if (saving) {
      clearTimeout(saveTimer);
      saveTimer = setTimeout(saveDraft, 300);
      return;
    }
    saving = true;
    const body = { selections: wire(), time_ms: elapsed(), ...criteria() };
    const sent = JSON.stringify(body.selections) + JSON.stringify(body.criteria) + JSON.stringify(body.rationales);
    try {
      const response = await post(page.draft_url, body);
      if (response.ok) {
        const data = await response.json().catch(() => null);
        showComputed(data);
        if (data && data.version) version = data.version;
        const now = criteria();
        if (JSON.stringify(wire()) + JSON.stringify(now.criteria) + JSON.stringify(now.rationales) === sent) {
          dirty = false;
          window.localStorage.removeItem(storageKey);
        } else {
          keepLocal();
        }
        statusLine.textContent = msg.saved;
        statusLine.dataset.state = "saved";
        return;
      }
      const data = await response.json().catch(() => ({}));
      statusLine.textContent = msg.refused + " " + (data.error || response.status);
      statusLine.dataset.state = "refused";
    } catch (e) {
      statusLine.textContent = msg.unsaved;
      statusLine.dataset.state = "unsaved";
      saveTimer = setTimeout(saveDraft, 5000);
    } finally {
      saving = false;
    }
  }

  function showErrors(lines) {
    errorsBox.textContent = "";
    errorsBox.hidden = !lines.length;
    for (const line of lines) {
      const p = document.createElement("p");
      p.textContent = line;
      errorsBox.appendChild(p);
    }
    if (lines.length) errorsBox.scrollIntoView({ block: "nearest" });
  }

  // A refusal's issues in the page's language: the criteria lacking a score or a rationale, one
  // line each, named as the table names them; a fragment's issue says which fragment.
  function issueLines(issues) {
    const lines = [], gaps = new Map();
    for (const issue of issues) {
      const missing = { criterion_missing: msg.noScore, rationale_missing: msg.noRationale }[issue.kind];
      if (!missing) {
        lines.push((issue.fragment === null ? "" : msg.fragment + " " + (issue.fragment + 1) + ": ") + issue.message);
        continue;
      }
      const name = issue.message.split(":")[0];
      if (!gaps.has(name)) gaps.set(name, []);
      gaps.get(name).push(missing);
    }
    for (const [name, missing] of gaps) {
      const row = document.querySelector('#markup-criteria tr[data-criterion="' + name + '"]');
      lines.push((row ? row.dataset.title : name) + ": " + missing.join(", "));
    }
    return lines;
  }

  const submitButton = document.getElementById("markup-submit");
  if (submitButton) {
    submitButton.addEventListener("click", async () => {
      clearTimeout(saveTimer);
      submitButton.disabled = true;
      statusLine.textContent = msg.submitting;
      submitKey = submitKey || (window.crypto.randomUUID ? window.crypto.randomUUID() : String(Date.now()));
      try {
        const response = await post(page.submit_url, {
          selections: wire(),
          time_ms: elapsed(),
          key: submitKey,
          ...criteria(),
        });
        const data = await response.json().catch(() => ({}));
        if (response.ok) {
          window.localStorage.removeItem(storageKey);
          dirty = false;
          window.location.href = data.next || page.queue_url;
          return;
        }
        const lines = (data.issues && data.issues.length)
          ? issueLines(data.issues)
          : [data.error || String(response.status)];
        checked = true;
        showProgress();
        showErrors(lines);
        statusLine.textContent = "";
      } catch (e) {
        showErrors([msg.unsaved]);
      }
      submitButton.disabled = false;
    });
  }

  window.addEventListener("beforeunload", () => {
    if (dirty) keepLocal();
  });

  resetForm();
  render();
  showProgress();
  if (dirty && page.editable) saveDraft();
})();
