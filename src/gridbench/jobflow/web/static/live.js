// Live status: one server-sent-event stream per page, pushed by the runner's observer.
// Every string from the server goes into the DOM with textContent (never as HTML).
(function () {
  "use strict";
  var section = document.getElementById("live");
  if (!section) return;
  var rid = section.getAttribute("data-rid");
  var snapEl = document.getElementById("live-snapshot");
  var state = snapEl ? JSON.parse(snapEl.textContent) : {samples: [], trials: []};
  var MAXPTS = 3600;
  window.gbLive = {events: 0, samples: state.samples.length, status: state.status, ended: false};

  var CHARTS = {
    "lc-rate": [["offered_per_s", "offered"], ["achieved_per_s", "achieved (acknowledged)"], ["completed_per_s", "completed"]],
    "lc-submit": [["submit_mean_s", "mean"], ["submit_p95_s", "p95"]],
    "lc-fail": [["failures_per_s", "failures/s"], ["failed_total", "failed (total)"]],
    "lc-stages": [["submitting", "submitting"], ["queued", "queued"], ["running", "running"], ["in_flight", "in flight"]],
    "lc-cpu": [["client_cpu_percent", "client CPU %"]]
  };
  var LAYOUT = {margin: {l: 50, r: 10, t: 10, b: 40}, height: 260, template: "plotly_white",
                legend: {orientation: "h", y: -0.25}, xaxis: {type: "date"}};

  function tracesFor(id, samples) {
    return CHARTS[id].map(function (spec, i) {
      return {type: "scatter", mode: "lines", name: spec[1],
              line: {dash: i === 0 && CHARTS[id].length > 1 ? "dash" : "solid", width: i === 0 ? 3 : 2},
              x: samples.map(function (s) { return new Date(s.t * 1000); }),
              y: samples.map(function (s) { return s[spec[0]]; })};
    });
  }
  function drawAll() {
    if (!window.Plotly) return;
    Object.keys(CHARTS).forEach(function (id) {
      var el = document.getElementById(id);
      if (el) window.Plotly.react(el, tracesFor(id, state.samples), LAYOUT, {displaylogo: false, responsive: true});
    });
  }
  function addSample(s) {
    state.samples.push(s);
    window.gbLive.samples = state.samples.length;
    if (!window.Plotly) return;
    Object.keys(CHARTS).forEach(function (id) {
      var el = document.getElementById(id);
      if (!el || !el.data) return;
      var xs = [], ys = [], idx = [];
      CHARTS[id].forEach(function (spec, i) { xs.push([new Date(s.t * 1000)]); ys.push([s[spec[0]]]); idx.push(i); });
      window.Plotly.extendTraces(el, {x: xs, y: ys}, idx, MAXPTS);
    });
  }
  // running times tick on a local clock (corrected by the server's clock at page load)
  var skew = (Number(document.getElementById("elapsed").getAttribute("data-now")) || Date.now() / 1000) - Date.now() / 1000;
  function secs(t) { return Math.max(0, t).toFixed(1); }
  function tick() {
    var now = Date.now() / 1000 + skew, active = section.getAttribute("data-active") === "yes";
    var st = Number(document.getElementById("started").getAttribute("data-started"));
    var end = now;
    if (!active || window.gbLive.ended) {
      end = Math.max.apply(null, state.trials.map(function (t) { return t.ended || 0; })) || now;
    }
    if (st) setText("elapsed", secs(end - st) + " s");
    var cells = document.querySelectorAll("#trial-table .t-time");
    for (var i = 0; i < cells.length; i++) {
      var a = Number(cells[i].getAttribute("data-started")), b = Number(cells[i].getAttribute("data-ended"));
      if (a) cells[i].textContent = secs((b || now) - a);
    }
  }
  function setText(id, text) { var el = document.getElementById(id); if (el) el.textContent = text; }
  function updateTrial(t) {
    if (!t || !t.trial_id) return;
    var row = document.getElementById("trial-" + t.trial_id);
    if (!row) return;
    ["submitted", "acknowledged", "completed", "in_flight", "failed", "late", "dropped"].forEach(function (k) {
      var c = row.querySelector(".t-" + k); if (c) c.textContent = t[k];
    });
    var st = row.querySelector(".t-status"); if (st) st.textContent = t.status === "running" ? t.phase : t.status;
    updateAgents(t);
    var tc = row.querySelector(".t-time");
    if (tc) { tc.setAttribute("data-started", t.started || ""); tc.setAttribute("data-ended", t.ended || ""); }
    var bar = row.querySelector(".t-bar");
    if (bar) { bar.max = t.planned || Math.max(1, t.submitted); bar.value = t.submitted + (t.dropped || 0); }
    var i = state.trials.findIndex(function (x) { return x.trial_id === t.trial_id; });
    if (i >= 0) state.trials[i] = t;
    var done = state.trials.filter(function (x) { return x.status !== "pending" && x.status !== "running"; }).length;
    setText("trials-done", String(done));
    var ov = document.getElementById("overall"); if (ov) ov.value = done;
  }
  // agents on Dask: one row per agent, updated in place (names go in with textContent)
  var AGENT_KEYS = ["phase", "submitted", "acknowledged", "completed", "in_flight", "failed", "late", "dropped"];
  function fmtMs(v) { return Number(v).toFixed(2) + " ms"; }
  function updateAgents(t) {
    var box = document.getElementById("agents-live"), body = document.querySelector("#agent-table tbody");
    if (!box || !body || !t.agents) return;
    box.hidden = false;
    setText("agents-trial", t.trial_id);
    var lat = t.submit_latency_ms;
    setText("submit-latency-value", lat ? "p50 " + fmtMs(lat.p50) + " · p99 " + fmtMs(lat.p99) + " · max " +
      fmtMs(lat.max) + " (" + lat.count + " submissions)" : "–");
    var rows = {};
    Array.prototype.forEach.call(body.querySelectorAll("tr.agent-row"), function (r) { rows[r.getAttribute("data-agent")] = r; });
    Object.keys(t.agents).sort().forEach(function (name) {
      var a = t.agents[name], row = rows[name];
      if (!row) {
        row = document.createElement("tr"); row.className = "agent-row"; row.setAttribute("data-agent", name);
        var td = document.createElement("td"); td.className = "a-name"; td.textContent = name; row.appendChild(td);
        AGENT_KEYS.forEach(function (k) {
          var c = document.createElement("td"); c.className = (k === "phase" ? "" : "n ") + "a-" + k; row.appendChild(c);
        });
        body.appendChild(row);
      }
      AGENT_KEYS.forEach(function (k) {
        var c = row.querySelector(".a-" + k); if (c) c.textContent = a[k] === null || a[k] === undefined ? "–" : a[k];
      });
    });
  }
  function addMessage(text) {
    var ul = document.getElementById("messages"), li = document.createElement("li");
    li.textContent = text; ul.appendChild(li);
  }
  function setStatus(st) {
    state.status = st.status; window.gbLive.status = st.status;
    setText("live-state", st.status); setText("status", st.status);
    var s = document.getElementById("status"); if (s) s.className = "status s-" + st.status + " " + (st.tone || "info");
  }

  window.gbWhenPlotly(drawAll);
  tick();
  if (section.getAttribute("data-active") === "yes") setInterval(tick, 1000);
  if (section.getAttribute("data-active") !== "yes" || !window.EventSource) return;

  var es = new EventSource("/experiments/" + encodeURIComponent(rid) + "/events");
  function on(kind, fn) {
    es.addEventListener(kind, function (ev) { window.gbLive.events++; fn(JSON.parse(ev.data)); });
  }
  es.onopen = function () { setText("live-conn", "(live)"); };
  es.onerror = function () { setText("live-conn", window.gbLive.ended ? "" : "(reconnecting…)"); };
  on("snapshot", function (s) {
    state = s; drawAll();
    if (s.started) document.getElementById("started").setAttribute("data-started", s.started); s.trials.forEach(updateTrial); setStatus(s);
    var ul = document.getElementById("messages"); ul.textContent = "";
    s.messages.forEach(addMessage);
  });
  on("progress", updateTrial);
  on("trial", updateTrial);
  on("sample", addSample);
  on("message", addMessage);
  on("status", function (st) {
    setStatus(st);
    if (st.status === "running" && !document.getElementById("started").getAttribute("data-started")) {
      var t0 = Date.now() / 1000 + skew;
      document.getElementById("started").setAttribute("data-started", t0);
      setText("started", new Date(t0 * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC");
    }
  });
  on("end", function (s) {
    window.gbLive.ended = true; es.close(); setStatus(s);
    setText("live-conn", "(finished; loading the results)");
    window.location.reload();
  });
})();
