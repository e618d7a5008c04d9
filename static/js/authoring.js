// Autosave of the authoring form: a draft is saved a second after the author stops typing and
// every 30 s while the tab is visible; the active writing time (seconds with the tab visible
// and a keystroke in the last two minutes) goes with each save. The server bounds it again.
(function () {
  "use strict";
  var form = document.getElementById("authoring-form");
  if (!form) return;
  var state = document.getElementById("saved-state");
  var counter = document.getElementById("char-count");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var dirty = false, timer = null, active = 0, lastKey = Date.now(), saving = false;

  setInterval(function () {
    if (document.visibilityState === "visible" && Date.now() - lastKey < 120000) active += 1;
  }, 1000);

  function save() {
    if (saving || !dirty) return;
    saving = true; dirty = false;
    var data = new FormData(form);
    data.set("seconds", String(active));
    var sent = active;
    fetch(form.dataset.saveUrl, {
      method: "POST", body: data, credentials: "same-origin",
      headers: { "X-CSRFToken": csrf, "Accept": "application/json" }
    }).then(function (r) { return r.json().then(function (body) { return [r.ok, body]; }); })
      .then(function (res) {
        if (res[0]) { active -= sent; state.textContent = state.dataset.saved || "✓"; state.className = "saved-state"; }
        else { dirty = true; state.textContent = Object.entries(res[1].errors || {}).map(function (e) { return e[0] + ": " + e[1]; }).join("; "); state.className = "field-error"; }
      })
      .catch(function () { dirty = true; state.textContent = "…"; })
      .finally(function () { saving = false; });
  }
  form.addEventListener("input", function () {
    dirty = true; lastKey = Date.now();
    if (counter) counter.textContent = String(document.getElementById("f-text").value.length);
    clearTimeout(timer); timer = setTimeout(save, 1000);
  });
  setInterval(save, 30000);
  window.addEventListener("beforeunload", save);
  form.addEventListener("submit", function () { form.querySelector("input[name=seconds]").value = String(active); });
})();
