// The study's participant pages: the task timer and a guard against double submits.
// Display only: the server times every task from its own Start and Stop stamps, so the
// timer counts from the elapsed time the server rendered (no trust in the browser's clock).
(function () {
  "use strict";

  function hms(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    var m = Math.floor(s / 60) % 60;
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    return Math.floor(s / 3600) + ":" + pad(m) + ":" + pad(s % 60);
  }

  var elapsed = document.getElementById("elapsed");
  if (elapsed) {
    var base = Number(elapsed.getAttribute("data-elapsed-ms")) || 0;
    var t0 = performance.now();
    var tick = function () { elapsed.textContent = hms(base + performance.now() - t0); };
    tick();
    setInterval(tick, 1000);
  }

  // The server's start stamp in the participant's own time zone, beside the UTC one.
  var started = document.getElementById("started-at");
  var local = document.getElementById("started-local");
  if (started && local) {
    var ms = Number(started.getAttribute("data-started-ns")) / 1e6;
    local.textContent = " (" + new Date(ms).toLocaleTimeString() + " your time)";
    local.hidden = false;
  }

  // A second click while the first post is on its way would be a replay (answered by the
  // server with the current step); it is simply not sent.
  var forms = document.querySelectorAll("form[data-once]");
  for (var i = 0; i < forms.length; i++) {
    forms[i].addEventListener("submit", function (ev) {
      var f = ev.currentTarget;
      if (f.getAttribute("data-sent")) {
        ev.preventDefault();
        return;
      }
      f.setAttribute("data-sent", "1");
    });
  }

  // A failed answer: bring its question into view and focus (the summary says what).
  var bad = document.querySelector("[aria-invalid=true]");
  if (bad) { bad.focus(); }

  window.gbStudy = { ready: true };
})();
