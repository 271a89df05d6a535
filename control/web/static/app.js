// Progressive enhancement only: every page works without this script.
// A run page refreshes itself when the run's status changes, unless a form on it has unsaved input.
(function () {
  "use strict";
  var status = document.querySelector("[data-run-id]");
  if (!status) { return; }
  var runId = status.getAttribute("data-run-id");
  var shown = status.getAttribute("data-status");
  var dirty = false;
  document.addEventListener("input", function () { dirty = true; });
  function poll() {
    fetch("/api/runs/" + encodeURIComponent(runId), { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (data && data.status && data.status !== shown && !dirty) { window.location.reload(); }
      })
      .catch(function () { /* the next poll tries again */ })
      .finally(function () { window.setTimeout(poll, 2000); });
  }
  window.setTimeout(poll, 2000);
}());

// The policy page refreshes what is in force in the background; the form is never touched, so a
// value the person changed and has not saved stays as they left it (marked unsaved).
(function () {
  "use strict";
  var live = document.querySelector("[data-policy-live]");
  var form = document.querySelector("[data-testid=policy-form]");
  if (!live || !form) { return; }
  var marker = document.querySelector("[data-testid=dirty-marker]");
  form.addEventListener("change", function () {
    form.setAttribute("data-dirty", "yes");
    if (marker) { marker.hidden = false; }
  });
  function refresh() {
    fetch("/api/policy", { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (!data || !data.current) { return; }
        live.querySelectorAll("[data-field]").forEach(function (node) {
          var value = data.current[node.getAttribute("data-field")];
          if (value !== undefined && value !== null) { node.textContent = String(value); }
        });
      })
      .catch(function () { /* the next refresh tries again */ })
      .finally(function () { window.setTimeout(refresh, 1000); });
  }
  window.setTimeout(refresh, 1000);
}());
