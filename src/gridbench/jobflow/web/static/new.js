// The new-experiment page: the form and the YAML are two views of one spec object.
// A form edit sets its dotted path in the spec and the server re-renders the YAML; a YAML
// edit is parsed by the server (with the spec's own validation) and fills the form.
(function () {
  "use strict";
  var yaml = document.getElementById("yaml");
  var status = document.getElementById("yaml-status");
  var fields = Array.prototype.slice.call(document.querySelectorAll("[data-path]"));
  var csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  var presetData = JSON.parse(document.getElementById("preset-data").textContent);
  var agentsEl = document.getElementById("preset-agents");  // saved presets' agents: blocks
  var presetAgents = agentsEl ? JSON.parse(agentsEl.textContent) : {};
  var spec = {};
  var seq = 0;
  window.gbSync = {pending: 0, lastError: null, spec: function () { return spec; }};

  function post(url, body) {
    window.gbSync.pending++;
    return fetch(url, {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
      body: JSON.stringify(body)}).then(function (r) { return r.json(); })
      .finally(function () { window.gbSync.pending--; });
  }
  function getPath(obj, path) {
    return path.split(".").reduce(function (o, k) { return o && typeof o === "object" ? o[k] : undefined; }, obj);
  }
  function setPath(obj, path, value) {
    var parts = path.split("."), o = obj;
    for (var i = 0; i < parts.length - 1; i++) {
      if (typeof o[parts[i]] !== "object" || o[parts[i]] === null) o[parts[i]] = {};
      o = o[parts[i]];
    }
    if (value === undefined) delete o[parts[parts.length - 1]]; else o[parts[parts.length - 1]] = value;
  }
  function show(v, kind) {
    if (v === undefined || v === null) return "";
    if (kind === "json") return JSON.stringify(v);
    if (kind === "csv") return Array.isArray(v) ? v.join(", ") : String(v);
    return String(v);
  }
  function read(el) {
    var kind = el.getAttribute("data-kind"), raw = el.value.trim();
    if (raw === "") return undefined;
    if (kind === "int") { var n = Number(raw); if (!Number.isInteger(n)) throw new Error("a whole number"); return n; }
    if (kind === "json") return JSON.parse(raw);
    if (kind === "csv") return raw.split(",").map(function (s) { return s.trim(); }).filter(Boolean)
      .map(function (s) { return /^\d+(\.\d+)?$/.test(s) ? Number(s) : s; });
    if (/^\d+(\.\d+)?$/.test(raw) && kind === "text" && el.getAttribute("data-path") !== "name") return Number(raw);
    return raw;
  }
  function fillForm() {
    fields.forEach(function (el) {
      if (el === document.activeElement) return;
      el.value = show(getPath(spec, el.getAttribute("data-path")), el.getAttribute("data-kind"));
      el.removeAttribute("aria-invalid");
    });
  }
  function setStatus(text, bad) {
    status.textContent = text; status.className = bad ? "note bad" : "note";
  }
  function parseYaml() {
    var my = ++seq;
    return post("/api/spec/parse", {yaml: yaml.value}).then(function (res) {
      if (my !== seq) return;
      window.gbSync.lastError = res.error;
      if (res.data && typeof res.data === "object") { spec = res.data; fillForm(); }
      if (res.error) setStatus((res.error.where ? res.error.where + ": " : "") + res.error.message + (res.error.fix ? " (fix: " + res.error.fix + ")" : ""), true);
      else setStatus("valid spec; the form shows it", false);
    });
  }
  function dumpYaml() {
    var my = ++seq;
    return post("/api/spec/dump", {data: spec}).then(function (res) {
      if (my !== seq || !res.yaml) return;
      yaml.value = res.yaml;
      return parseYaml();
    });
  }
  function debounce(fn, ms) {
    var t = null;
    return function () { clearTimeout(t); t = setTimeout(fn, ms); };
  }
  var fromForm = function (el) {
    try {
      setPath(spec, el.getAttribute("data-path"), read(el));
      el.removeAttribute("aria-invalid");
    } catch (err) {
      el.setAttribute("aria-invalid", "true");
      setStatus(el.getAttribute("data-path") + ": " + err.message, true);
      return;
    }
    dumpYaml();
  };
  fields.forEach(function (el) {
    var run = debounce(function () { fromForm(el); }, 250);
    el.addEventListener(el.tagName === "SELECT" ? "change" : "input", run);
  });
  yaml.addEventListener("input", debounce(parseYaml, 300));

  // Presets: applied in the page so unsaved edits survive (the Use button works without JS).
  var pick = document.querySelector("form.preset-pick");
  pick.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var key = document.getElementById("preset").value, p = presetData[key];
    if (!p) return;
    if (p.yaml !== undefined) { yaml.value = p.yaml; parseYaml(); }
    else {
      spec.backend = JSON.parse(JSON.stringify(p));
      if (presetAgents[key]) { spec.load = spec.load || {}; spec.load.agents = JSON.parse(JSON.stringify(presetAgents[key])); }
      fillForm(); dumpYaml();
    }
    setStatus("preset " + key + " applied", false);
  });
  // An uploaded file replaces the YAML view at once.
  var up = document.querySelector('input[name="upload"]');
  if (up) up.addEventListener("change", function () {
    var f = up.files && up.files[0];
    if (!f) return;
    f.text().then(function (t) { yaml.value = t; up.value = ""; parseYaml(); });
  });
  parseYaml();
})();
