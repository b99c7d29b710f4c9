// Draws every figure embedded as <script type="application/json" data-plot="ID">: the
// same glue as the HTML report, as a file so the page's CSP can forbid inline scripts.
// One chart per task, those on screen first, so the page is readable and responsive at
// once and never waits for the last chart.
(function () {
  "use strict";
  // plotly.js (4.8 MB) is fetched after the page is parsed, so the page never waits for it.
  var me = document.currentScript, waiting = [], loaded = false;
  window.gbWhenPlotly = function (cb) { if (loaded) cb(); else waiting.push(cb); };
  function loadPlotly() {
    if (window.Plotly) { ready(); return; }
    var s = document.createElement("script");
    s.src = me.getAttribute("data-plotly");
    s.onload = ready;
    s.onerror = function () { loaded = true; start(); };
    document.head.appendChild(s);
  }
  function ready() {
    loaded = true;
    start();
    waiting.splice(0).forEach(function (cb) { cb(); });
  }
  function drawOne(el) {
    var target = document.getElementById(el.getAttribute("data-plot"));
    if (!target || target.getAttribute("data-drawn")) return;
    try {
      var fig = JSON.parse(el.textContent);
      window.Plotly.newPlot(target, fig.data, fig.layout, {responsive: true, displaylogo: false});
      target.setAttribute("data-drawn", "yes");
    } catch (err) {
      target.textContent = "This chart could not be drawn: " + err;
      target.setAttribute("data-drawn", "error");
    }
  }
  function onScreen(el) {
    var r = el.parentNode.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight;
  }
  function start() {
    var els = Array.prototype.slice.call(
      document.querySelectorAll('script[type="application/json"][data-plot]'));
    if (!window.Plotly) {
      els.forEach(function (el) {
        var t = document.getElementById(el.getAttribute("data-plot"));
        if (t) t.textContent = "The charting library did not load; the tables hold the same numbers.";
      });
      return;
    }
    var queue = els.filter(onScreen).concat(els.filter(function (e) { return !onScreen(e); }));
    document.body.setAttribute("data-charts", "drawing");
    (function next() {
      var el = queue.shift();
      if (!el) { document.body.setAttribute("data-charts", "drawn"); return; }
      drawOne(el);
      setTimeout(next, 0);
    })();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", loadPlotly);
  else setTimeout(loadPlotly, 0);
})();
