"""The dashboard's HTTP API against a live ``gridbench serve`` and the reference grid.

Security (token off loopback, CSRF, Host check, escaping, CSP), the live event stream,
/metrics in OpenMetrics, abort with clean-up, downloads, the plan's confirmation and the
refusal of literal secrets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import BIN, cli_env
from web_server import Server, csrf_of, fast_spec, free_port, read_events, serve, start_run

XSS = '<script>alert("xss")</script><img src=x onerror=alert(1)>'
TOKEN = "t0ken-for-the-web-tests-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("web")
    with serve(base / "results", base / "serve.log") as s:
        yield s


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def finished(server: Server) -> tuple[str, list[tuple[str, object]], str]:
    """One fast run started through the form; its events and the /metrics text mid-run."""
    with httpx.Client(base_url=server.url, timeout=60) as c:
        rid = start_run(c, fast_spec("api-run", duration="4s"))
        events: list[tuple[str, object]] = []
        metrics_text = ""
        import json as _json

        kind = None
        with c.stream("GET", f"/experiments/{rid}/events", timeout=120) as s:
            for line in s.iter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:") and kind:
                    data = _json.loads(line[5:])
                    events.append((kind, data))
                    if (
                        not metrics_text
                        and kind == "progress"
                        and isinstance(data, dict)
                        and data.get("acknowledged", 0) >= 2
                    ):
                        metrics_text = httpx.get(server.url + "/metrics").text
                    if kind == "end":
                        break
        return rid, events, metrics_text


def test_sse_stream_delivers_live_events(finished: tuple[str, list, str], server: Server) -> None:
    _, events, _ = finished
    kinds = [k for k, _ in events]
    assert kinds[0] == "snapshot"
    assert kinds[-1] == "end"
    assert events[-1][1] == {"status": "complete"}, server.tail()
    submitted = [d["submitted"] for k, d in events if k == "progress"]
    assert submitted == sorted(submitted) and submitted[-1] == 8  # 2/s for 4 s
    samples = [d for k, d in events if k == "sample"]
    assert len(samples) >= 3
    assert max(s["offered_per_s"] for s in samples) > 0.5
    assert any(s["submit_mean_s"] is not None and s["submit_mean_s"] > 0 for s in samples)
    assert all(0 <= s["client_cpu_percent"] < 400 for s in samples)
    statuses = [d["status"] for k, d in events if k == "status"]
    assert "analysing" in statuses and statuses[-1] == "complete"
    finals = [d for k, d in events if k == "trial" and d["status"] == "complete"]
    assert finals and finals[-1]["completed"] == 8


def test_results_page_after_the_run(finished: tuple[str, list, str], client: httpx.Client) -> None:
    rid, _, _ = finished
    r = client.get(f"/experiments/{rid}")
    assert r.status_code == 200
    page = r.text
    assert 'id="charts"' in page and 'data-plot="plot-' in page
    assert "Down-sampled on the server" in page or "No down-sampling was needed" in page
    assert 'id="table-latency"' in page and 'id="table-thresholds"' in page
    assert "<script>" not in page.replace('<script type="application/json"', "")
    listing = client.get("/", params={"q": "api-run"}).text
    assert rid in listing and "pass" in listing
    assert rid not in client.get("/", params={"q": "no-such-thing"}).text


SUSTAIN_USERS_SPEC = """\
name: web-sustain-users
backend: {type: local, options: {slots: 8}}
job: {command: ["true"]}
users: [{name: alice}, {name: bob}]
load: {model: sustain, users: 2, jobs_per_user: 2, sleep_coef: 0.05s}
trial: {duration: 1.5s}
timeouts: {status_interval: 0.1s}
"""


def test_results_page_shows_the_reports_sections(server: Server, client: httpx.Client) -> None:
    """The dashboard draws the run's report: a sustain run with users shows its per-user
    table (and every other table the HTML report has), like report.html."""
    rid = start_run(client, SUSTAIN_USERS_SPEC)
    events = read_events(client, rid)
    assert events[-1][1] == {"status": "complete"}, server.tail()
    page = client.get(f"/experiments/{rid}").text
    assert 'id="table-users"' in page and 'id="table-sustain"' in page
    users = page.split('id="table-users"')[1].split("</table>")[0]
    assert "<td>alice</td>" in users and "<td>bob</td>" in users
    report = (server.root / rid / "report.html").read_text()
    tables = set(re.findall(r'id="table-([a-z0-9-]+)"', report))
    assert tables and tables <= set(re.findall(r'id="table-([a-z0-9-]+)"', page))


def test_downloads(finished: tuple[str, list, str], client: httpx.Client) -> None:
    rid, _, _ = finished
    r = client.get(f"/experiments/{rid}/download/metrics.json")
    assert r.status_code == 200 and r.json()["schema"] == "gridbench.metrics/1"
    assert "attachment" in r.headers["content-disposition"]
    r = client.get(f"/experiments/{rid}/download/latency.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.text.splitlines()[0].count(",") >= 3
    for bad in ("..%2F..%2Fetc%2Fpasswd", "report.html", "x.csv.exe", "..%2Fspec.yaml"):
        assert client.get(f"/experiments/{rid}/download/{bad}").status_code == 404, bad
    assert client.get("/experiments/..%2F..%2Fetc/download/metrics.json").status_code == 404


def test_metrics_endpoint_is_openmetrics(finished: tuple[str, list, str]) -> None:
    rid, _, text = finished
    assert text, "no /metrics scrape was taken while the run was live"
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    sub = fams["gridbench_trial_jobs_submitted"]
    assert sub.type == "counter"
    values = [s.value for s in sub.samples if s.labels.get("experiment") == rid]
    assert values and values[0] >= 2
    running = fams["gridbench_experiment_running"]
    assert any(s.labels["experiment"] == rid and s.value == 1.0 for s in running.samples)
    assert "gridbench_offered_rate_per_second" in fams


def test_abort_cleans_up_like_ctrl_c(server: Server, client: httpx.Client) -> None:
    from gridbench.jobflow.api import JobFlowRun
    from gridbench.jobflow.experiment.cleanup import find_outstanding
    from gridbench.store.layout import RunDir

    rid = start_run(client, fast_spec("api-abort", rate="4/s", duration="60s"))
    kind = None
    csrf = csrf_of(client.get(f"/experiments/{rid}").text)
    aborted = False
    statuses = []
    with client.stream("GET", f"/experiments/{rid}/events", timeout=120) as s:
        for line in s.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind:
                data = json.loads(line[5:])
                if kind == "progress" and data["acknowledged"] >= 4 and not aborted:
                    r = client.post(f"/experiments/{rid}/abort", data={"csrf": csrf})
                    assert r.status_code == 303
                    aborted = True
                if kind == "status":
                    statuses.append(data["status"])
                if kind == "end":
                    assert data["status"] == "aborted", server.tail()
                    break
    assert "aborting" in statuses
    run = RunDir(server.root / rid)
    assert run.read_experiment()["status"] == "aborted"
    assert find_outstanding(run) == {}  # every acknowledged job ended or was cancelled
    trial = json.loads((JobFlowRun.of(run).trial_dir("p00-t00") / "trial.json").read_text())
    assert trial["status"] == "aborted"
    assert trial["events"] > 0


def test_csrf_is_required(server: Server, client: httpx.Client) -> None:
    spec = fast_spec("csrf")
    # no cookie, no token
    r = httpx.post(server.url + "/new", data={"yaml": spec, "action": "start"})
    assert r.status_code == 403
    csrf = csrf_of(client.get("/new").text)
    # a cookie but a wrong or missing form token
    assert client.post("/new", data={"yaml": spec, "action": "plan"}).status_code == 403
    r = client.post("/new", data={"csrf": "x" * 43, "yaml": spec, "action": "plan"})
    assert r.status_code == 403
    # the right token from another origin
    r = client.post(
        "/new",
        data={"csrf": csrf, "yaml": spec, "action": "plan"},
        headers={"origin": "http://evil.example"},
    )
    assert r.status_code == 403
    # JSON API needs the header
    assert client.post("/api/spec/parse", json={"yaml": spec}).status_code == 403
    r = client.post("/api/spec/parse", json={"yaml": spec}, headers={"x-csrf-token": csrf})
    assert r.status_code == 200 and r.json()["data"]["name"] == "csrf"
    r = client.post("/new", data={"csrf": csrf, "yaml": spec, "action": "plan"})
    assert r.status_code == 200 and 'id="plan-summary"' in r.text
    assert not list(server.root.glob("*-csrf"))  # nothing was started


def test_host_header_and_security_headers(server: Server) -> None:
    r = httpx.get(server.url + "/", headers={"host": "attacker.example"})
    assert r.status_code == 400  # DNS rebinding of a loopback server
    r = httpx.get(server.url + "/")
    csp = r.headers["content-security-policy"]
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )
    assert "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    js = httpx.get(server.url + "/vendor/plotly.min.js?v=1")
    assert js.status_code == 200 and "immutable" in js.headers["cache-control"]
    assert "cdn.plot.ly" not in js.text


def test_xss_payloads_render_inert(
    finished: tuple[str, list, str], server: Server, client: httpx.Client
) -> None:
    rid, _, _ = finished
    src = server.root / rid
    evil = server.root / "20991231T000000Z-evil"
    shutil.copytree(src, evil)
    exp = json.loads((evil / "experiment.json").read_text())
    exp.update(id=evil.name, name=XSS, description=XSS, error=XSS, backend=XSS, verdict=XSS)
    (evil / "experiment.json").write_text(json.dumps(exp))
    m = json.loads((evil / "metrics.json").read_text())
    m["experiment"] = XSS
    m["thresholds"][0]["metric"] = XSS
    m["thresholds"][0]["where"] = XSS
    m["validity"] = {"valid": False, "invalid_trials": [XSS], "reasons": [XSS]}
    (evil / "metrics.json").write_text(json.dumps(m))
    (evil / "spec.yaml").write_text(f"name: '{XSS}'\n")
    trial = evil / "trials" / "p00-t00" / "trial.json"
    info = json.loads(trial.read_text())
    info["error"] = XSS  # a backend message
    trial.write_text(json.dumps(info))
    pages = [
        client.get("/"),
        client.get("/", params={"q": "alert"}),
        client.get(f"/experiments/{evil.name}"),
        client.get("/compare", params={"ids": [rid, evil.name]}),
        client.get("/history", params={"experiment": evil.name, "metric": XSS}),
    ]
    for r in pages:
        assert r.status_code == 200, r.url
        assert "<script>alert" not in r.text, r.url
        assert "<img src=x" not in r.text, r.url
    assert "&lt;script&gt;alert(" in pages[2].text or "\\u003cscript" in pages[2].text


def test_spec_errors_secrets_and_confirmation(server: Server, client: httpx.Client) -> None:
    csrf = csrf_of(client.get("/new").text)
    bad = client.post("/new", data={"csrf": csrf, "yaml": "name: x\nload: {rate: nope}\n"})
    assert bad.status_code == 422 and 'id="spec-error"' in bad.text and "rate" in bad.text
    secret = fast_spec("secret").replace(
        "options: {preset: batched}", "options: {preset: batched, password: hunter2hunter2}"
    )
    r = client.post("/new", data={"csrf": csrf, "yaml": secret, "action": "start"})
    assert r.status_code == 422 and "secret" in r.text
    assert "hunter2hunter2" not in r.text and "&lt;redacted&gt;" in r.text  # never echoed
    r = client.post("/api/spec/parse", json={"yaml": secret}, headers={"x-csrf-token": csrf})
    assert "hunter2hunter2" not in r.text
    assert not list(server.root.glob("*-secret"))
    big = fast_spec("big") + "safety: {confirm_above: 3}\n"
    r = client.post("/new", data={"csrf": csrf, "yaml": big, "action": "plan"})
    assert r.status_code == 200 and 'id="confirm"' in r.text
    r = client.post("/new", data={"csrf": csrf, "yaml": big, "action": "start"})
    assert r.status_code == 422 and "confirm" in r.text
    assert not list(server.root.glob("*-big"))


def test_presets_saved_without_secrets(server: Server, client: httpx.Client) -> None:
    page = client.get("/presets/edit", params={"copy": "demo"}).text
    csrf = csrf_of(page)
    text = (
        "description: my demo\nbackend:\n  type: command\n  options:\n    preset: demo\n"
        "    vars: {state_dir: /tmp/gb-web-demo}\n"
    )
    r = client.post("/presets/edit", data={"csrf": csrf, "name": "mydemo", "text": text})
    assert r.status_code == 303
    assert (server.root / ".presets" / "mydemo.yaml").is_file()
    assert "saved:mydemo" in client.get("/new").text
    leaky = text + "    env: {API_TOKEN: abcdefabcdef}\n"
    r = client.post("/presets/edit", data={"csrf": csrf, "name": "leaky", "text": leaky})
    assert r.status_code == 422 and "secret" in r.text and "abcdefabcdef" not in r.text
    assert not (server.root / ".presets" / "leaky.yaml").exists()
    r = client.post("/presets/edit", data={"csrf": csrf, "name": "../x", "text": text})
    assert r.status_code == 422
    # the templates and patterns, and a pattern tried on sample CLI output (XSS inert)
    sample = f"abc123 RUNNING -\nffff00 COMPLETED 0\n{XSS}\n"
    form = {"csrf": csrf, "name": "mydemo", "text": text, "action": "try", "op": "status"}
    r = client.post("/presets/edit", data={**form, "sample": sample})
    assert r.status_code == 200 and 'id="templates"' in r.text
    assert re.search(r"<td>abc123</td><td>running \(RUNNING\)</td>", r.text)
    assert re.search(r"<td>ffff00</td><td>done \(COMPLETED\)</td>", r.text)
    assert "<script>alert" not in r.text and "&lt;script&gt;" in r.text
    r = client.post("/presets/edit", data={**form, "sample": "nothing here"})
    assert r.status_code == 422 and "matches nothing" in r.text
    assert "arcsub" in client.get("/presets").text  # shipped templates are shown


def test_refuses_other_addresses_without_a_token(tmp_path: Path) -> None:
    p = subprocess.run(
        [str(BIN), "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        env=cli_env(tmp_path / "results"), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 2
    assert "refusing to serve on 0.0.0.0 without an access token" in p.stderr
    assert "Traceback" not in p.stderr


def test_token_required_off_loopback(tmp_path: Path) -> None:
    env = {"GB_WEB_TOKEN": TOKEN}
    with serve(
        tmp_path / "results",
        tmp_path / "serve.log",
        host="0.0.0.0",
        extra=["--token-env", "GB_WEB_TOKEN"],
        env=env,
    ) as s:
        assert TOKEN not in " ".join(s.proc.args)  # type: ignore[arg-type]
        assert httpx.get(s.url + "/").status_code == 401
        assert httpx.get(s.url + "/metrics").status_code == 401
        r = httpx.get(s.url + "/", headers={"accept": "text/html"})
        assert r.status_code == 303 and r.headers["location"] == "/login"
        wrong = {"authorization": "Bearer " + TOKEN[:-1] + "x"}
        assert httpx.get(s.url + "/", headers=wrong).status_code == 401
        ok = {"authorization": "Bearer " + TOKEN}
        assert httpx.get(s.url + "/", headers=ok).status_code == 200
        with httpx.Client(base_url=s.url) as c:
            csrf = csrf_of(c.get("/login").text)
            r = c.post("/login", data={"csrf": csrf, "token": "wrong-token-wrong-token"})
            assert r.status_code == 401
            r = c.post("/login", data={"csrf": csrf, "token": TOKEN})
            assert r.status_code == 303
            assert TOKEN not in r.headers.get("set-cookie", "")
            page = c.get("/")
            assert page.status_code == 200 and TOKEN not in page.text
        assert TOKEN not in s.tail(200)
        assert not any(TOKEN in p.read_text(errors="replace") for p in _files(tmp_path))


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.stat().st_size < 10_000_000]


def test_short_token_is_refused(tmp_path: Path) -> None:
    p = subprocess.run(
        [str(BIN), "serve", "--host", "0.0.0.0", "--token-env", "GB_T"],
        env={**cli_env(tmp_path), "GB_T": "short"}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 2 and "shorter than 16" in p.stderr


def test_matches_and_secret_finder() -> None:
    from gridbench.jobflow.web.literal_secrets import find_secrets
    from gridbench.web.routes.experiments import matches
    from gridbench.web.security import hash_token, token_matches

    entry = {"id": "20260101-a", "name": "Slurm ramp", "backend": "slurm", "status": "complete"}
    assert matches(entry, "slurm complete") and not matches(entry, "slurm aborted")
    assert find_secrets({"options": {"password": "x", "password_env": "PW", "key_file": "k"}}) == [
        "options.password"
    ]
    assert find_secrets({"env": {"MY_TOKEN": "abc"}, "vars": {"token": ""}}) == ["env.MY_TOKEN"]
    h = hash_token("abc")
    assert token_matches("abc", h) and not token_matches("abd", h) and not token_matches(None, h)
    assert os.environ.get("GB_WEB_TOKEN") is None


def test_cap_series_downsamples_long_lines() -> None:
    from gridbench.web.results import cap_series

    long = {"t": list(range(10_000)), "v": [float(i % 7) for i in range(10_000)]}
    out = cap_series({"throughput": {"ce": long}, "short": {"t": [1, 2], "v": [3, 4]}})
    ce = out["throughput"]["ce"]
    assert len(ce["t"]) <= 500 and ce["downsampled"] is True
    assert max(ce["v"]) == 6.0 and min(ce["v"]) == 0.0  # peaks survive
    assert out["short"] == {"t": [1, 2], "v": [3, 4]}


def test_stop_finishes_the_trial_and_starts_no_more(server: Server, client: httpx.Client) -> None:
    spec = fast_spec("api-stop", duration="3s") + "sweep: {rate: [2/s, 3/s]}\n"
    rid = start_run(client, spec)
    csrf = csrf_of(client.get(f"/experiments/{rid}").text)
    kind, stopped = None, False
    with client.stream("GET", f"/experiments/{rid}/events", timeout=120) as s:
        for line in s.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind:
                data = json.loads(line[5:])
                if kind == "progress" and data["submitted"] >= 2 and not stopped:
                    assert (
                        client.post(f"/experiments/{rid}/stop", data={"csrf": csrf}).status_code
                        == 303
                    )
                    stopped = True
                if kind == "end":
                    break
    run = server.root / rid
    exp = json.loads((run / "experiment.json").read_text())
    assert exp["status"] == "aborted" and exp["trials_done"] == 1
    first = json.loads((run / "trials" / "p00-t00" / "trial.json").read_text())
    assert first["status"] == "complete"  # the running trial was allowed to finish
    assert not (run / "trials" / "p01-t00").exists()
    assert (run / "metrics.json").is_file()  # what was recorded is analysed


def test_stopping_the_server_aborts_its_runs_like_ctrl_c(tmp_path: Path) -> None:
    from gridbench.jobflow.experiment.cleanup import find_outstanding
    from gridbench.store.layout import RunDir

    with (
        serve(tmp_path / "results", tmp_path / "serve.log") as s,
        httpx.Client(base_url=s.url, timeout=60) as c,
    ):
        rid = start_run(c, fast_spec("api-shutdown", rate="4/s", duration="60s"))
        kind = None
        with c.stream("GET", f"/experiments/{rid}/events", timeout=60) as st:
            for line in st.iter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif (
                    line.startswith("data:")
                    and kind == "progress"
                    and json.loads(line[5:])["acknowledged"] >= 4
                ):
                    break
        s.proc.send_signal(signal.SIGINT)
        assert s.proc.wait(timeout=60) == 130, s.tail()  # exit code: interrupted
    run = RunDir(tmp_path / "results" / rid)
    assert run.read_experiment()["status"] == "aborted", s.tail()
    assert find_outstanding(run) == {}


def test_runs_queue_beyond_max_running(tmp_path: Path) -> None:
    with (
        serve(tmp_path / "results", tmp_path / "serve.log", extra=["--max-running", "1"]) as s,
        httpx.Client(base_url=s.url, timeout=60) as c,
    ):
        first = start_run(c, fast_spec("queue-a", duration="2s"))
        second = start_run(c, fast_spec("queue-b", duration="2s"))
        third = start_run(c, fast_spec("queue-c", duration="2s"))
        row = re.search(rf'data-id="{second}" data-status="(\w+)"', c.get("/").text)
        assert row and row.group(1) == "queued"
        csrf = csrf_of(c.get(f"/experiments/{third}").text)
        assert c.post(f"/experiments/{third}/abort", data={"csrf": csrf}).status_code == 303
        assert read_events(c, third)[-1] == ("end", {"status": "aborted"})
        assert json.loads((s.root / third / "experiment.json").read_text())["status"] == "aborted"
        assert not list((s.root / third / "trials").iterdir())  # nothing was submitted
        events = read_events(c, second)
        statuses = [d["status"] for k, d in events if k == "status"]
        assert statuses[0] in ("starting", "running") and statuses[-1] == "complete", s.tail()
        for rid in (first, second):
            exp = json.loads((s.root / rid / "experiment.json").read_text())
            assert exp["status"] == "complete"
        a = json.loads((s.root / first / "experiment.json").read_text())
        b = json.loads((s.root / second / "experiment.json").read_text())
        assert b["started"] >= a["ended"]  # one at a time


def test_tampered_view_cache_is_not_served(finished: tuple[str, list, str], server: Server) -> None:
    from gridbench.web import results

    rid, _, _ = finished
    run = server.root / rid
    view = results.build_view(run, server.root)
    cache = run / results.CACHE_FILE
    data = json.loads(cache.read_text())
    assert data["view"]["headline"] == view.headline
    data["view"]["headline"] = XSS  # someone who can write the store, not the server's key
    cache.write_text(json.dumps(data))
    results._cached.cache_clear()
    again = results.build_view(run, server.root)
    assert XSS not in again.headline and again.headline == view.headline
    assert json.loads(cache.read_text())["view"]["headline"] == view.headline  # rewritten


# -- security review: ReDoS, bad JSON/YAML, secrets, paths, limits, sessions ------------------

EVIL_PRESET = """\
description: evil
backend:
  type: command
  options:
    preset: demo
    submit:
      argv: ["{python}", -m, gridbench.jobflow.backends.command.demo, submit, --, "{command}"]
      pattern: '^(?P<id>(a+)+)$'
"""


def test_catastrophic_regex_does_not_stall_the_server(server: Server, client: httpx.Client) -> None:
    import threading
    import time

    csrf = csrf_of(client.get("/presets/edit").text)
    form = {"csrf": csrf, "name": "evil", "text": EVIL_PRESET, "action": "try", "op": "submit"}
    answer: dict[str, httpx.Response] = {}

    def try_it() -> None:  # 2**40 steps of backtracking in-process: hours
        with httpx.Client(base_url=server.url, cookies=client.cookies, timeout=60) as c:
            answer["r"] = c.post("/presets/edit", data={**form, "sample": "a" * 40 + "!"})

    t = threading.Thread(target=try_it)
    t.start()
    time.sleep(1.0)  # the child is matching now
    slowest = 0.0
    for _ in range(5):  # the event loop (which times live runs) keeps answering
        t0 = time.monotonic()
        assert httpx.get(server.url + "/metrics", timeout=10).status_code == 200
        slowest = max(slowest, time.monotonic() - t0)
        time.sleep(0.3)
    t.join(timeout=60)
    assert not t.is_alive(), server.tail()
    r = answer["r"]
    assert r.status_code == 422 and "took longer than" in r.text and "backtracks" in r.text
    assert slowest < 3.0, f"/metrics took {slowest:.2f} s while a regex was tried"
    big = client.post("/presets/edit", data={**form, "sample": "a" * (65 * 1024)})
    assert big.status_code == 422 and "larger than 64 KiB" in big.text
    long = EVIL_PRESET.replace("(a+)+", "a" * 2100)
    r = client.post("/presets/edit", data={**form, "text": long, "sample": "aaa"})
    assert r.status_code == 422 and "longer than 2000 characters" in r.text
    # a good pattern still works through the child process
    ok = EVIL_PRESET.replace("(a+)+", "a+")
    r = client.post("/presets/edit", data={**form, "text": ok, "sample": "aaaa"})
    assert r.status_code == 200 and "<td>aaaa</td><td>submitted</td>" in r.text


def test_bad_json_and_deep_nesting_are_422(server: Server, client: httpx.Client) -> None:
    csrf = csrf_of(client.get("/new").text)
    h = {"x-csrf-token": csrf, "content-type": "application/json"}
    for path in ("/api/spec/parse", "/api/spec/dump"):
        r = client.post(path, content=b"{not json", headers=h)
        assert r.status_code == 422 and "not valid JSON" in r.json()["error"], r.text
        r = client.post(path, content=b"[" * 100_000 + b"]" * 100_000, headers=h)
        assert r.status_code == 422 and "nested more than" in r.json()["error"], r.text
    # 600 levels: fine for json.loads, too deep for ruamel's dumper
    deep = b'{"data":' + b'{"a":' * 600 + b"{}" + b"}" * 600 + b"}"
    r = client.post("/api/spec/dump", content=deep, headers=h)
    assert r.status_code == 422 and "nested more than" in r.json()["error"], r.text
    r = client.post("/api/spec/dump", json={"data": {"name": "ok"}}, headers={"x-csrf-token": csrf})
    assert r.status_code == 200 and r.json()["yaml"] == "name: ok\n"
    deep_yaml = "name: x\njob: " + "[" * 5000 + "]" * 5000 + "\n"
    r = client.post("/api/spec/parse", json={"yaml": deep_yaml}, headers={"x-csrf-token": csrf})
    assert r.status_code == 422 and "nested too deeply" in r.json()["error"]["message"]
    r = client.post("/new", data={"csrf": csrf, "yaml": deep_yaml, "action": "plan"})
    assert r.status_code == 422 and "nested too deeply" in r.text
    r = client.post("/presets/edit", data={"csrf": csrf, "name": "deep", "text": deep_yaml})
    assert r.status_code == 422 and "nested too deeply" in r.text
    huge = "name: x\n# " + "a" * (1024 * 1024 + 10) + "\n"
    r = client.post("/api/spec/parse", json={"yaml": huge}, headers={"x-csrf-token": csrf})
    assert r.json()["data"] is None and "larger than 1 MiB" in r.json()["error"]["message"]
    assert "Traceback" not in server.tail(400)


def test_literal_secrets_anywhere_are_refused_and_not_echoed(
    server: Server, client: httpx.Client
) -> None:
    csrf = csrf_of(client.get("/new").text)
    spec = (
        fast_spec("leak")
        .replace(
            "job: {runtime: 0.5s}",
            'job: {runtime: 0.5s, command: [curl, -u, "bob:PW-in-argv-1", "--password=PW-eq-2"]}',
        )
        .replace(
            "collectors: [{type: edgi, reports: auto, poll: 0.5s}]",
            'collectors: [{type: edgi, reports: ["https://bob:PW-in-url-3@h.io/r"]}]',
        )
    )
    for action in ("plan", "start"):
        r = client.post("/new", data={"csrf": csrf, "yaml": spec, "action": action})
        assert r.status_code == 422 and "literal secret" in r.text, r.text[-3000:]
        assert "job.command.2" in r.text and "job.command.3" in r.text
        assert "PW-" not in r.text and "&lt;redacted&gt;" in r.text
    r = client.post("/api/spec/parse", json={"yaml": spec}, headers={"x-csrf-token": csrf})
    assert r.status_code == 200 and "PW-" not in r.text
    assert r.json()["data"]["job"]["command"] == ["curl", "-u", "<redacted>", "<redacted>"]
    assert not list(server.root.glob("*-leak"))
    pem = EVIL_PRESET.replace(
        "description: evil",
        'description: "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAAPEM9"',
    )
    r = client.post("/presets/edit", data={"csrf": csrf, "name": "pem", "text": pem})
    assert r.status_code == 422 and "b3BlbnNzaC1rZXkt" not in r.text
    argv = EVIL_PRESET.replace("submit, --,", 'submit, -u, "bob:PW-preset-4", --,')
    r = client.post("/presets/edit", data={"csrf": csrf, "name": "argv", "text": argv})
    assert r.status_code == 422 and "literal secret" in r.text and "PW-preset-4" not in r.text
    assert not list((server.root / ".presets").glob("pem*")) and not list(
        (server.root / ".presets").glob("argv*")
    )


def test_secret_finder_values_and_key_names() -> None:
    from gridbench.jobflow.web.literal_secrets import find_secrets, redact

    assert find_secrets({"argv": ["curl", "-u", "bob:S3", "-u", "bob:{password}"]}) == ["argv.2"]
    assert find_secrets({"argv": ["x", "--password=S", "--token", "T", "--token", "$T"]}) == [
        "argv.1",
        "argv.3",
    ]
    assert find_secrets({"u": "https://bob:S@h/x", "v": "https://bob@h/x", "w": "see h.org"}) == [
        "u"
    ]
    assert find_secrets({"k": "x\n-----BEGIN RSA PRIVATE KEY-----\nMII"}) == ["k"]
    assert find_secrets({"k": "-----BEGIN PUBLIC KEY-----"}) == []
    keys = {"ssh_key": "a", "apiKey": "b", "auth": "c", "X-Auth-Token": "d", "Cookie": "e"}
    keys |= {"passwd": "f", "credential": "g", "client_secret": "h"}
    assert sorted(find_secrets(keys)) == sorted(keys)
    fine = {"id_key": "^x$", "key_file": "k", "ssh_key": "~/.ssh/id", "credential": {}}
    assert find_secrets(fine) == []
    assert redact({"c": ["-u", "bob:S"]}) == {"c": ["-u", "<redacted>"]}


def test_history_and_compare_stay_inside_the_root(
    finished: tuple[str, list, str], server: Server, client: httpx.Client, tmp_path: Path
) -> None:
    from gridbench.errors import GridbenchError
    from gridbench.web.compare_view import run_paths

    rid, _, _ = finished
    outside = tmp_path / "elsewhere" / rid
    shutil.copytree(server.root / rid, outside)
    exp = json.loads((outside / "experiment.json").read_text())
    exp["name"] = "outside-the-root-marker"
    (outside / "experiment.json").write_text(json.dumps(exp))
    for experiment in (str(outside), f"../{outside.parent.name}/{rid}"):
        r = client.get(
            "/history", params={"experiment": experiment, "metric": "latency.overall.p99"}
        )
        assert r.status_code == 200 and "outside-the-root-marker" not in r.text
        assert 'id="chart-history"' not in r.text
    for bad in (str(outside), "..", f"{rid}/../{rid}"):
        with pytest.raises(GridbenchError):
            run_paths(server.root, [bad])
    assert run_paths(server.root, [rid]) == [str(server.root / rid)]
    ids = [f"2026010{i}T000000Z-x" for i in range(11)]
    assert client.get("/compare", params={"ids": ids}).status_code == 422
    assert client.get("/compare.json", params={"ids": ids}).status_code == 422


def test_planted_symlinks_are_not_followed(
    finished: tuple[str, list, str], server: Server, client: httpx.Client, tmp_path: Path
) -> None:
    rid, _, _ = finished
    planted = server.root / "20991231T000001Z-planted"
    shutil.copytree(server.root / rid, planted)
    secret = tmp_path / "private.txt"
    secret.write_text("server-private-marker\n")
    (planted / "spec.yaml").unlink()
    (planted / "spec.yaml").symlink_to(secret)
    table = next((planted / "tables").glob("*.csv"))
    table.unlink()
    table.symlink_to(secret)
    for name in ("spec.yaml", table.name):
        r = client.get(f"/experiments/{planted.name}/download/{name}")
        assert r.status_code == 404 and "server-private-marker" not in r.text
    page = client.get(f"/experiments/{planted.name}")
    assert page.status_code == 200 and "server-private-marker" not in page.text
    assert client.get(f"/experiments/{rid}/download/spec.yaml").status_code == 200


def test_bodies_are_cut_off_at_the_cap_as_they_arrive(server: Server) -> None:
    import select
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(server.url)
    with socket.create_connection((u.hostname, u.port), timeout=20) as s:
        s.sendall(
            b"POST /new HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Cookie: gb_csrf=" + b"c" * 43 + b"\r\n\r\n"  # so the CSRF check reads the form
        )
        chunk = b"a" * 65536
        for _ in range(40):  # 2.5 MiB, and the body is never finished
            if select.select([s], [], [], 0)[0]:
                break  # the answer came before the body ended: the cut-off under test
            try:
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and closed while we were still sending
        # the old middleware waited for the whole body: this read would time out
        head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 413"), head[:200]
    with socket.create_connection((u.hostname, u.port), timeout=20) as s:
        s.sendall(  # a declared length above the cap is refused before any byte of the body
            b"POST /new HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3145728\r\n\r\n"
        )
        head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 413"), head[:200]


def test_event_streams_and_queue_are_capped(tmp_path: Path) -> None:
    import contextlib

    from gridbench.web.routes.run_control import MAX_SUBSCRIBERS

    limits = httpx.Limits(max_connections=MAX_SUBSCRIBERS + 8)
    with (
        serve(
            tmp_path / "results",
            tmp_path / "serve.log",
            extra=["--max-running", "1", "--max-queued", "1"],
        ) as s,
        httpx.Client(base_url=s.url, timeout=60, limits=limits) as c,
    ):
        running = start_run(c, fast_spec("cap-a", duration="60s"))
        queued = start_run(c, fast_spec("cap-b", duration="2s"))
        csrf = csrf_of(c.get("/new").text)
        spec = fast_spec("cap-c", duration="2s")
        r = c.post("/new", data={"csrf": csrf, "yaml": spec, "action": "start"})
        assert r.status_code == 429 and "already queued" in r.text and "--max-queued" in r.text
        readers = []  # kept: dropping a line iterator closes its connection
        with contextlib.ExitStack() as streams:
            for _ in range(MAX_SUBSCRIBERS):
                resp = streams.enter_context(c.stream("GET", f"/experiments/{running}/events"))
                assert resp.status_code == 200
                readers.append(resp.iter_lines())
                assert next(readers[-1]).startswith("event: snapshot")  # subscribed
            extra = c.get(f"/experiments/{running}/events")
            assert extra.status_code == 429 and "event streams" in extra.text
        for rid in (queued, running):
            csrf = csrf_of(c.get(f"/experiments/{rid}").text)
            assert c.post(f"/experiments/{rid}/abort", data={"csrf": csrf}).status_code == 303
        assert read_events(c, running)[-1] == ("end", {"status": "aborted"}), s.tail()


def test_finished_runs_are_pruned_from_memory(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from gridbench.web.manager import KEEP_FINISHED, RunManager

    m = RunManager(tmp_path)
    for i in range(KEEP_FINISHED + 10):
        m.runs[f"done-{i:03d}"] = SimpleNamespace(live=SimpleNamespace(final=True), task=None)  # type: ignore[assignment]
    m.runs["live"] = SimpleNamespace(live=SimpleNamespace(final=False), task=None)  # type: ignore[assignment]
    m._prune()
    assert (
        "live" in m.runs and "done-000" not in m.runs and f"done-{KEEP_FINISHED + 9:03d}" in m.runs
    )
    assert sum(1 for k in m.runs if k.startswith("done-")) == KEEP_FINISHED - 1  # room for one


def test_sessions_logout_and_login_slowdown(tmp_path: Path) -> None:
    from gridbench.web.security import MAX_SESSIONS, AccessPolicy, hash_token

    # a token on loopback (recommended on shared hosts) works as off loopback
    with serve(
        tmp_path / "results",
        tmp_path / "serve.log",
        extra=["--token-env", "GB_WEB_TOKEN"],
        env={"GB_WEB_TOKEN": TOKEN},
    ) as s:
        assert httpx.get(s.url + "/").status_code == 401
        with httpx.Client(base_url=s.url) as c:
            csrf = csrf_of(c.get("/login").text)
            r = c.post("/login", data={"csrf": csrf, "token": TOKEN})
            assert r.status_code == 303
            cookie = r.headers["set-cookie"].lower()
            assert "max-age=43200" in cookie and "httponly" in cookie and "secure" not in cookie
            page = c.get("/")
            assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
            assert 'action="/logout"' in page.text
            assert c.post("/logout", data={"csrf": csrf_of(page.text)}).status_code == 303
            assert c.get("/").status_code == 401
    policy = AccessPolicy(token_hash=hash_token(TOKEN))
    assert policy.login_delay("10.0.0.1") == 0.0
    delays = []
    for _ in range(8):
        assert policy.login("wrong", "10.0.0.1") is None
        delays.append(policy.login_delay("10.0.0.1"))
    assert delays == sorted(delays) and delays[0] > 0 and delays[-1] == 8.0
    assert policy.login_delay("10.0.0.2") == 0.0  # per address
    first = policy.login(TOKEN, "10.0.0.1")
    assert first is not None and policy.login_delay("10.0.0.1") == 0.0  # reset on success
    for _ in range(MAX_SESSIONS):
        policy.login(TOKEN)
    assert len(policy.sessions) == MAX_SESSIONS and not policy._session_ok(first)


def test_view_cache_key_is_regenerated_when_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gridbench.web import results

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = results._key_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"short")
    os.utime(path, (1, 1))  # an old, truncated file: not one being written now
    results._key.cache_clear()
    try:
        key = results._key()
        assert len(key) == 32 and path.read_bytes() == key
        results._key.cache_clear()
        assert results._key() == key  # read back, not made again
    finally:
        results._key.cache_clear()


def test_an_ingested_run_is_found_by_its_recorded_id(server: Server, client: httpx.Client) -> None:
    """The dashboard resolves runs as the CLI does (store.catalogue.find_run): a run
    ingested into a folder of another name is listed by the id in its experiment.json, and
    that id opens its page (it used to be a 404: the page looked for a folder of that name)."""
    t0 = 1_700_000_000.0
    lines = [
        json.dumps({"job": f"j{i}", "stage": stage, "t_s": t0 + i * 0.5 + dt, "source": "client"})
        for i in range(6)
        for stage, dt in (("intended", 0.0), ("submit", 0.001), ("submit_ack", 0.01),
                          ("client_done", 1.0 + 0.1 * i))
    ]  # fmt: skip
    events = server.root.parent / "ingest-events.jsonl"
    events.write_text("\n".join(lines) + "\n")
    out = server.root / "imported-by-hand"
    p = subprocess.run(
        [str(BIN), "ingest", "jsonl", str(events), "--out", str(out)],
        env=cli_env(server.root), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    rid = json.loads((out / "experiment.json").read_text())["id"]
    assert rid != out.name
    listing = client.get("/")
    assert listing.status_code == 200 and f'data-id="{rid}"' in listing.text
    assert f'href="/experiments/{rid}"' in listing.text
    for ref in (rid, out.name):
        r = client.get(f"/experiments/{ref}")
        assert r.status_code == 200, (ref, r.text[-2000:])
        assert "imported-by-hand" in r.text
    assert client.get(f"/experiments/{rid}/download/experiment.json").status_code == 200
    assert client.get("/history", params={"experiment": rid, "metric": "x"}).status_code == 200
