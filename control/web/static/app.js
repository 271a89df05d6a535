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
