"""A benchmark family from a plugin package proves the family seam end to end.

``tests/plugins/gridbench_timeit`` (family ``timeit``: a local command timed N times)
plugs in only through its ``gridbench.families`` entry point (the dist-info folder next
to it, found by importlib.metadata once ``tests/plugins`` is on PYTHONPATH): no pip
install, no change to gridbench. Everything runs the real CLI and the real dashboard:
its own command (``gridbench timeit run``), then the generic ones (list, analyze, report,
show, compare, history) and the dashboard's list, results, compare and history pages.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import BIN, cli_env
from web_server import Server, serve

PLUGINS = Path(__file__).parents[1] / "plugins"
REPS = 5
SPEC = """\
name: plugin-timing
command: [sleep, "0.01"]
repetitions: {reps}
thresholds:
  - {{metric: wall_s.p50, op: "<", value: 30}}
"""


def plugin_env(results: Path) -> dict[str, str]:
    env = cli_env(results)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PLUGINS), os.environ.get("PYTHONPATH", "")) if p
    )
    return env


def gb(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(BIN), *args], env=plugin_env(results), capture_output=True, text=True, timeout=300
    )
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two timeit runs of the same spec, made by the plugin's own command."""
    tmp = tmp_path_factory.mktemp("plugin")
    results = tmp / "results"
    spec = tmp / "timeit.yaml"
    spec.write_text(SPEC.format(reps=REPS))
    runs = []
    for _ in range(2):
        before = set(results.iterdir()) if results.is_dir() else set()
        p = gb("timeit", "run", str(spec), "--results", str(results), results=results)
        assert p.returncode == 0, p.stdout + p.stderr
        [run] = set(results.iterdir()) - before
        runs.append(run)
    return {"tmp": tmp, "results": results, "a": runs[0], "b": runs[1]}


def test_the_plugin_is_found_by_its_entry_point(store: dict[str, Path]) -> None:
    p = gb("--help", results=store["results"])
    assert p.returncode == 0 and "timeit" in p.stdout
    p = gb("timeit", "run", "--help", results=store["results"])
    assert p.returncode == 0 and "SPEC" in p.stdout.upper()
    # without the plugin on the path, gridbench does not know the family (and says so)
    env = cli_env(store["results"])  # the environment as it was: no tests/plugins
    q = subprocess.run(
        [str(BIN), "show", str(store["a"])], env=env, capture_output=True, text=True, timeout=120
    )
    assert q.returncode == 2 and "Traceback" not in q.stderr
    assert "unknown benchmark family 'timeit'" in q.stderr


def test_run_records_each_timing_and_its_kind(store: dict[str, Path]) -> None:
    run = store["a"]
    exp = json.loads((run / "experiment.json").read_text())
    assert exp["kind"] == "timeit" and exp["status"] == "complete"
    assert exp["command"] == ["sleep", "0.01"] and exp["repetitions"] == REPS
    assert (run / "spec.yaml").read_text() == SPEC.format(reps=REPS)
    rows = [json.loads(line) for line in (run / "timings.jsonl").read_text().splitlines()]
    assert [r["i"] for r in rows] == list(range(REPS))
    assert all(r["returncode"] == 0 and 0.009 < r["wall_s"] < 30 for r in rows)


def test_list_shows_the_run_with_its_kind(store: dict[str, Path]) -> None:
    p = gb("list", "--json", results=store["results"])
    assert p.returncode == 0, p.stderr
    entries = {Path(e["path"]).name: e for e in json.loads(p.stdout)}
    for key in ("a", "b"):
        e = entries[store[key].name]
        assert e["kind"] == "timeit" and e["target"] == "sleep 0.01"
        assert e["variant"] == f"{REPS} repetitions" and e["verdict"] == "pass"
    p = gb("list", results=store["results"])
    assert p.returncode == 0 and "timeit" in p.stdout and "sleep 0.01" in p.stdout
    # the plugin's own column, and no job-flow column in a store without job-flow runs
    assert "reps" in p.stdout and "trials" not in p.stdout, p.stdout


def test_analyze_and_report_write_its_metrics_and_report(store: dict[str, Path]) -> None:
    run, results = store["a"], store["results"]
    (run / "report.html").unlink(missing_ok=True)
    p = gb("analyze", str(run), results=results)
    assert p.returncode == 0, p.stdout + p.stderr
    m = json.loads((run / "metrics.json").read_text())
    assert m["schema"] == "gridbench.timeit/1"
    wall = m["wall_s"]
    assert wall["n"] == REPS == len(m["samples_s"])
    assert all(0.009 < x < 30 for x in m["samples_s"])
    assert 0.009 < wall["min"] <= wall["p50"] <= wall["max"] and wall["sd"] >= 0
    assert wall["min"] <= wall["mean"] <= wall["max"]
    assert m["validity"]["valid"] is True and m["failures"] == 0
    [t] = m["thresholds"]
    assert t["metric"] == "wall_s.p50" and t["passed"] is True
    assert t["actual"] == pytest.approx(wall["p50"])
    p = gb("analyze", str(run), "--json", results=results)
    assert p.returncode == 0 and json.loads(p.stdout)["schema"] == "gridbench.timeit/1"
    p = gb("report", run.name, results=results)
    assert p.returncode == 0, p.stdout + p.stderr
    html = (run / "report.html").read_text()
    assert "Wall time per repetition" in html and "Wall time of each repetition" in html
    assert "gridbench.metrics/1" not in (run / "metrics.json").read_text()


def test_show_works(store: dict[str, Path]) -> None:
    p = gb("show", store["b"].name, results=store["results"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert '"kind": "timeit"' in p.stdout and "sleep 0.01" in p.stdout


def test_compare_and_history_through_the_figures(store: dict[str, Path]) -> None:
    a, b, results = store["a"].name, store["b"].name, store["results"]
    p = gb("compare", a, b, results=results)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "wall_time" in p.stdout and "point all" in p.stdout
    p = gb("compare", a, b, "--json", results=results)
    assert p.returncode == 0, p.stderr
    c = json.loads(p.stdout)
    assert c["schema"] == "gridbench.compare/1" and c["baseline"] == a
    m = c["points"][0]["metrics"]["wall_time"]
    assert [v["n"] for v in m["values"]] == [REPS, REPS]
    assert all(v["value"] > 0.009 for v in m["values"])
    assert m["diffs"][0]["test"] == "welch-t" and m["diffs"][0]["p_adjusted"] is not None
    p = gb("history", b, "--metric", "wall_time", "--json", results=results)
    assert p.returncode == 0, p.stderr
    h = json.loads(p.stdout)
    assert [e["experiment"] for e in h["entries"]] == [a, b] and h["better"] == "lower"
    p = gb("history", b, "--metric", "nope", results=results)
    assert p.returncode == 2 and "has no figure 'nope'" in p.stderr and "wall_time" in p.stderr


def test_compare_refuses_mixed_families_in_one_line(store: dict[str, Path]) -> None:
    results = store["results"]
    jf = results / "20200101T000000Z-jobflow-like"
    jf.mkdir()
    (jf / "experiment.json").write_text(json.dumps({"id": jf.name, "name": "jf"}))
    try:
        p = gb("compare", store["a"].name, jf.name, results=results)
        assert p.returncode == 2
        assert "different benchmark families" in p.stderr and "jobflow" in p.stderr
        assert "fix:" in p.stderr
    finally:
        (jf / "experiment.json").unlink()
        jf.rmdir()


def test_a_bad_spec_is_one_line(store: dict[str, Path]) -> None:
    bad = store["tmp"] / "bad.yaml"
    bad.write_text("name: x\ncommand: sleep\nrepetitions: 0\n")
    p = gb("timeit", "run", str(bad), "--results", str(store["tmp"] / "r2"), results=store["tmp"])
    assert p.returncode == 2 and "bad.yaml" in p.stderr


@pytest.fixture(scope="module")
def server(store: dict[str, Path]) -> Iterator[Server]:
    env = {"PYTHONPATH": plugin_env(store["results"])["PYTHONPATH"]}
    with serve(store["results"], store["tmp"] / "serve.log", env=env) as s:
        yield s


def test_dashboard_lists_and_shows_the_plugin_run(store: dict[str, Path], server: Server) -> None:
    a, b = store["a"].name, store["b"].name
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.get("/")
        assert r.status_code == 200, server.tail()
        assert f'data-id="{a}"' in r.text and 'data-kind="timeit"' in r.text
        assert "sleep 0.01" in r.text and f"{REPS} repetitions" in r.text
        r = c.get(f"/experiments/{a}")
        assert r.status_code == 200, server.tail()
        assert "could not be read" not in r.text, r.text[-3000:]
        assert "Wall time per repetition" in r.text  # its table
        assert 'id="fig-wall_time_chart"' in r.text  # its chart
        assert "timeit" in r.text and "sleep 0.01" in r.text
        r = c.get("/compare", params={"ids": [a, b]})
        assert r.status_code == 200 and 'id="compare-table"' in r.text, r.text[-3000:]
        assert "wall_time" in r.text and 'id="compare-error"' not in r.text
        r = c.get("/compare.json", params={"ids": [a, b]})
        assert r.status_code == 200 and r.json()["metrics"][0]["metric"] == "wall_time"
        r = c.get("/history", params={"experiment": b, "metric": "wall_time"})
        assert r.status_code == 200 and 'id="chart-history"' in r.text, r.text[-3000:]
        assert '<option value="wall_time">' in r.text


def test_dashboard_list_shows_the_plugins_own_columns_and_search(
    store: dict[str, Path], server: Server
) -> None:
    """The list's family columns and search come through ``CatalogueEntry``: a store of
    timeit runs shows timeit's own column (``reps``) and none of job flow's (``trials``),
    and the search covers the text timeit adds (its spec's hash)."""
    spec_hash = json.loads((store["a"] / "experiment.json").read_text())["spec_hash"]
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.get("/")
        assert r.status_code == 200, server.tail()
        assert '<th scope="col">reps</th>' in r.text
        assert '<th scope="col">trials</th>' not in r.text  # job flow's column: no job-flow run
        assert f'<td class="n">{REPS}</td>' in r.text
        r = c.get("/", params={"q": spec_hash})  # both runs are of the same spec
        shown, total = re.search(r'id="count">(\d+) of (\d+) ', r.text).groups()  # type: ignore[union-attr]
        assert shown == total and int(total) >= 2, r.text[-3000:]
        r = c.get("/", params={"q": f"{spec_hash}x"})
        assert 'id="count">0 of ' in r.text


def test_dashboard_analyses_through_the_family(store: dict[str, Path], server: Server) -> None:
    from web_server import csrf_of

    run = store["b"]
    (run / "metrics.json").unlink()
    with httpx.Client(base_url=server.url, timeout=60) as c:
        page = c.get(f"/experiments/{run.name}")
        assert page.status_code == 200 and 'id="no-results"' in page.text
        assert f'action="/experiments/{run.name}/analyse"' in page.text  # no trials, still
        r = c.post(f"/experiments/{run.name}/analyse", data={"csrf": csrf_of(page.text)})
        assert r.status_code == 303, server.tail()
        m = json.loads((run / "metrics.json").read_text())
        assert m["schema"] == "gridbench.timeit/1" and m["wall_s"]["n"] == REPS
        page = c.get(f"/experiments/{run.name}")
        assert "Wall time per repetition" in page.text
        r = c.get("/history", params={"experiment": run.name})
        assert r.status_code == 200 and 'value="wall_time"' in r.text


def test_the_plugin_adds_its_page_and_starts_a_run_from_a_spec(
    store: dict[str, Path], server: Server
) -> None:
    """The family seams of the dashboard: a plugin's own page (WebPages), and a run of the
    plugin's family started from its spec on /start (StartsFromSpec), analysed after."""
    from web_server import csrf_of

    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.get("/timeit")
        assert r.status_code == 200, server.tail()
        assert 'id="timeit-count"' in r.text and "2 timeit runs" in r.text
        assert 'href="/start?kind=timeit"' in r.text
        page = c.get("/start", params={"kind": "timeit"})
        assert page.status_code == 200 and '<option value="timeit" selected>' in page.text
        assert '<option value="jobflow"' not in page.text  # job flow starts on /new
        csrf = csrf_of(page.text)
        r = c.post("/start", data={"csrf": csrf, "kind": "timeit", "yaml": "name: x\n"})
        assert r.status_code == 422 and 'id="spec-error"' in r.text  # no command: refused
        r = c.post("/start", data={"csrf": csrf, "kind": "nope", "yaml": SPEC.format(reps=2)})
        assert r.status_code == 422 and "no family &#39;nope&#39;" in r.text
        r = c.post("/start", data={"kind": "timeit", "yaml": SPEC.format(reps=2)})
        assert r.status_code == 403  # no CSRF token: refused like every form
        spec = SPEC.format(reps=2).replace("plugin-timing", "started-on-the-web")
        r = c.post("/start", data={"csrf": csrf, "kind": "timeit", "yaml": spec})
        assert r.status_code == 303, r.text[-2000:]
        rid = r.headers["location"].rsplit("/", 1)[1]
    [run] = [p for p in store["results"].iterdir() if p.name == rid or rid in p.name]
    deadline = time.monotonic() + 60
    while not (run / "metrics.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    m = json.loads((run / "metrics.json").read_text())
    assert m["schema"] == "gridbench.timeit/1" and m["wall_s"]["n"] == 2
    assert json.loads((run / "experiment.json").read_text())["kind"] == "timeit"
