"""Server processes' CPU and RSS during a trial (issue 14 item 2), against real processes."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console

from gridbench.errors import ResultsError, SpecError
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.analysis.server import cpu_seconds, server_resources
from gridbench.jobflow.experiment.runner import ExperimentOutcome, ExperimentRunner
from gridbench.jobflow.metrics_schema import validate_metrics
from gridbench.jobflow.report import build_report
from gridbench.jobflow.report.rows import all_tables
from gridbench.jobflow.spec import load_spec_text, make_plan
from gridbench.report import render_report
from gridbench.report.html import render_page


def run_spec(text: str, root: Path) -> ExperimentOutcome:
    spec, data = load_spec_text(text)
    runner = ExperimentRunner(make_plan(spec, data), data, root)
    return asyncio.run(runner.execute())


def _kill(p: subprocess.Popen[bytes]) -> None:
    if p.poll() is None:
        p.kill()
    p.wait(timeout=10)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, object]]:
    """A busy process (by pid), an idle one with a unique name, and one that ends soon."""
    idle_name = "gbidle" + uuid.uuid4().hex[:8]  # < 15 characters: the kernel's comm
    idle_bin = tmp_path / idle_name
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, idle_bin)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        procs.append(busy)
        idle = subprocess.Popen([str(idle_bin), "60"])
        procs.append(idle)
        brief = subprocess.Popen([sleep, "1"])
        procs.append(brief)
        # reaped as soon as it ends, so its pid really disappears (no zombie left behind)
        threading.Thread(target=brief.wait, daemon=True).start()
        dead = subprocess.Popen(["true"])
        dead.wait(timeout=10)  # ended and reaped before the trial starts
        yield {
            "dead": dead.pid,
            "busy": busy.pid,
            "idle_name": idle_name,
            "idle": idle.pid,
            "brief": brief.pid,
            "unknown": "gbnone" + uuid.uuid4().hex[:8],
        }
    finally:
        for p in procs:
            _kill(p)


def _spec(s: dict[str, object]) -> str:
    return f"""
name: server-resources
backend: {{type: noop, options: {{runtime_s: 0.1}}}}
load: {{model: open, rate: 20/s}}
trial: {{duration: 3s}}
timeouts: {{status_interval: 0.1s}}
server_processes:
  - {{pid: {s["busy"]}, label: busy}}
  - {{name: {s["idle_name"]}, label: idle}}
  - {{pid: {s["brief"]}, label: brief}}
  - {{name: {s["unknown"]}}}
  - {{pid: {s["dead"]}, label: dead}}
"""


def test_server_processes_are_sampled_analysed_and_reported(
    tmp_path: Path, servers: dict[str, object]
) -> None:
    out = run_spec(_spec(servers), tmp_path)
    assert out.status == "complete"
    trial_dir = out.run.trial_dir("p00-t00")

    # the CSV: rows of the busy and idle processes, the brief one recorded as gone
    csv = pl.read_csv(trial_dir / "server_resources.csv")
    assert csv.columns == ["t_ns", "label", "pid", "cpu_percent", "rss_bytes", "state"]
    running = csv.filter(pl.col("state") == "running")
    assert set(running["label"].unique()) >= {"busy", "idle"}
    assert set(running.filter(pl.col("label") == "idle")["pid"]) == {servers["idle"]}
    gone = csv.filter(pl.col("state") == "gone")
    assert sorted(gone.select("label", "pid").rows()) == [
        ("brief", servers["brief"]),
        ("dead", servers["dead"]),
    ]
    assert servers["unknown"] not in set(csv["label"])

    # the unknown name and the dead pid are notes in trial.json, not errors
    info = json.loads((trial_dir / "trial.json").read_text())
    notes = info.get("notes", [])
    assert len(notes) == 2
    assert str(servers["unknown"]) in notes[0] and f"pid {servers['dead']}" in notes[1]

    metrics = analyze_run(out.run.path, write=True)
    validate_metrics(metrics)
    trial = metrics["points"][0]["trials"][0]
    srv = trial["server_resources"]
    busy, idle = srv["busy"], srv["idle"]
    assert busy["cpu_mean_pct"] > 20.0
    assert idle["cpu_max_pct"] < 5.0
    assert busy["rss_max_bytes"] > 0 and idle["rss_max_bytes"] > 0
    assert busy["samples"] >= 3 and idle["processes"] == 1
    assert srv["brief"]["gone"] == [servers["brief"]]
    assert srv["dead"]["samples"] == 0 and srv["dead"]["cpu_s"] is None
    submitted = trial["jobs"]["submitted"]
    assert submitted == busy["jobs_submitted"] > 0
    assert busy["cpu_s_per_job"] == pytest.approx(busy["cpu_s"] / submitted)
    # the busy loop spent far more CPU per job than the client (noop calls in-process)
    assert busy["client_cpu_s"] is not None
    assert busy["cpu_s_per_job"] > busy["client_cpu_s_per_job"]

    # the report: a table in the HTML page, the terminal, and the CSV exports
    report = build_report(metrics, {})
    page = render_page(report)
    assert "Server processes during the trials" in page
    console = Console(record=True, width=200)
    render_report(report, console, verbose=True)
    text = console.export_text()
    assert "Server processes during the trials" in text and "busy" in text
    rows = all_tables(metrics)["server_processes"]
    assert {r["label"] for r in rows} == {"busy", "idle", "brief", "dead"}
    row = next(r for r in rows if r["label"] == "busy")
    assert row["server_cpu_ms_per_job"] == pytest.approx(busy["cpu_s_per_job"] * 1e3)


def test_no_table_without_server_samples(tmp_path: Path) -> None:
    out = run_spec(
        """
name: plain
backend: {type: noop}
load: {model: open, rate: 20/s}
trial: {jobs: 5}
""",
        tmp_path,
    )
    assert not (out.run.trial_dir("p00-t00") / "server_resources.csv").exists()
    metrics = analyze_run(out.run.path)
    assert "server_resources" not in metrics["points"][0]["trials"][0]
    page = render_page(build_report(metrics, {}))
    assert "Server processes during the trials" not in page
    assert all_tables(metrics)["server_processes"] == []


BASE = "name: x\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\ntrial: {jobs: 1}\n"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("{label: x}", "exactly one of name"),
        ("{name: slurmctld, pid: 12}", "exactly one of name"),
        ("{pid: 0}", "greater than 0"),
        ("{pid: -3}", "greater than 0"),
        ("{name: ''}", "server_processes.0.name"),
        ("{name: a, colour: red}", "colour"),
    ],
)
def test_bad_entries_are_one_spec_error(entry: str, says: str) -> None:
    text = f"{BASE}server_processes: [{entry}]\n"
    with pytest.raises(SpecError) as err:
        load_spec_text(text)
    assert "server_processes" in str(err.value) and says in str(err.value)


def test_labels_must_be_unique() -> None:
    text = f"{BASE}server_processes: [{{name: a}}, {{pid: 5, label: a}}]\n"
    with pytest.raises(SpecError, match="labels must be unique; repeated: a"):
        load_spec_text(text)


def test_cpu_seconds_integrate_each_interval() -> None:
    t = np.array([0, 500_000_000, 1_500_000_000], dtype=np.int64)
    # 100% over the first (median-long, 0.75 s) interval, 50% over 0.5 s, 200% over 1 s
    assert cpu_seconds(t, np.array([100.0, 50.0, 200.0])) == pytest.approx(0.75 + 0.25 + 2.0)
    assert cpu_seconds(np.array([7], dtype=np.int64), np.array([100.0])) == pytest.approx(0.5)


def test_processes_of_one_name_add_up_per_sample() -> None:
    samples = pl.DataFrame(
        {
            "t_ns": [0, 0, 1_000_000_000, 1_000_000_000, 2_000_000_000],
            "label": ["d"] * 5,
            "pid": [10, 11, 10, 11, 11],
            "cpu_percent": [30.0, 10.0, 50.0, 30.0, None],
            "rss_bytes": [100, 200, 100, 300, None],
            "state": ["running", "running", "running", "running", "gone"],
        }
    )
    res = server_resources(samples, submitted=4)["d"]
    assert res["cpu_mean_pct"] == pytest.approx(60.0) and res["cpu_max_pct"] == 80.0
    assert res["cpu_s"] == pytest.approx(0.4 + 0.8)
    assert res["cpu_s_per_job"] == pytest.approx(1.2 / 4)
    assert res["rss_max_bytes"] == 400 and res["gone"] == [11]
    assert res["client_cpu_s_per_job"] is None


def test_schema_rejects_a_bad_server_figure() -> None:
    metrics = {
        "schema": "gridbench.metrics/1",
        "points": [{"trials": [{"server_resources": {"d": {"cpu_s": "lots"}}}]}],
    }
    with pytest.raises(ResultsError, match=r"server_resources\.d\.cpu_s"):
        validate_metrics(metrics)


def test_a_restarted_daemon_is_followed_by_name(tmp_path: Path) -> None:
    name = "gbdmn" + uuid.uuid4().hex[:8]
    binary = tmp_path / name
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, binary)
    procs = [subprocess.Popen([str(binary), "60"])]

    def restart() -> None:
        procs[0].kill()
        procs[0].wait(timeout=10)
        procs.append(subprocess.Popen([str(binary), "60"]))

    timer = threading.Timer(1.0, restart)
    try:
        timer.start()
        out = run_spec(
            f"""
name: restart
backend: {{type: noop}}
load: {{model: open, rate: 10/s}}
trial: {{duration: 3s}}
server_processes: [{{name: {name}, label: daemon}}]
""",
            tmp_path,
        )
        timer.join()
        first, second = procs[0].pid, procs[1].pid
        csv = pl.read_csv(out.run.trial_dir("p00-t00") / "server_resources.csv")
        running = csv.filter(pl.col("state") == "running")
        assert set(running["pid"]) == {first, second}
        assert csv.filter(pl.col("state") == "gone")["pid"].to_list() == [first]
        daemon = analyze_run(out.run.path)["points"][0]["trials"][0]["server_resources"]["daemon"]
        assert daemon["pids"] == sorted([first, second]) and daemon["gone"] == [first]
    finally:
        timer.cancel()
        for p in procs:
            _kill(p)
