"""Campaigns against real runs: job flow on the embedded reference grid, storage's POSIX
conformance (pjdfstest) on a local directory against tmpfs, messaging on loopback; each
unit its family's own command, each campaign through the CLI as a user runs it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from campaign_helpers import (
    campaign_dirs,
    events,
    gb,
    io_spec,
    io_targets,
    jobflow_spec,
    net_spec,
    summary,
    tree_digest,
)
from conftest import BIN, cli_env

FOUR = """\
name: four
description: four units in three families, one of them meant to fail
plan: {items: [reference grid, a directory and tmpfs, loopback], not_tested: [Bonnie]}
components:
  - id: aem
    features: [job flow]
    units:
      - id: flow
        spec: jobflow.yaml
        pass: {thresholds: [{metric: latency.overall.p99, op: "<", value: 60}]}
      - id: strict
        spec: jobflow.yaml
        set: [name=cmp-jf-strict]
        pass: {thresholds: [{metric: latency.overall.p99, op: "<", value: 0.0001}]}
  - id: fs
    units: [{id: posix, spec: storage.yaml}]
  - id: msg
    units: [{id: pingpong, spec: messaging.yaml}]
"""


def test_four_units_in_three_families_one_failing_its_threshold(tmp_path: Path) -> None:
    results = tmp_path / "results"
    jobflow_spec(tmp_path)
    net_spec(tmp_path)
    camp = tmp_path / "campaign.yaml"
    camp.write_text(FOUR, encoding="utf-8")
    with io_targets() as targets:
        io_spec(tmp_path, targets)
        p = gb(results, "campaign", "run", str(camp))
    out = p.stdout + p.stderr
    assert p.returncode == 1, out  # a unit failed: the campaign says failed
    assert "Traceback" not in out
    [folder] = campaign_dirs(results)
    s = summary(folder)
    assert s["counts"]["passed"] == 3 and s["total"] == 4, s["counts"]
    assert s["verdicts"] == {
        "aem.flow": "passed",
        "aem.strict": "failed",
        "fs.posix": "passed",
        "msg.pingpong": "passed",
    }
    [incident] = s["incidents"]  # one incident, naming the unit and its threshold
    assert incident["unit"] == "aem.strict" and incident["kind"] == "failed"
    assert "latency.overall.p99" in incident["summary"]
    assert incident["reproduce"].startswith(f"cd {tmp_path} && ")
    docs = folder / "docs"
    assert "3 of 4 units passed" in (docs / "summary.md").read_text()
    assert "3 of 4 units passed" in (docs / "summary.html").read_text()
    # the failing unit did not stop the campaign: the units after it ran
    starts = [e["unit"] for e in events(folder) if e["event"] == "start"]
    assert starts == ["aem.flow", "aem.strict", "fs.posix", "msg.pingpong"]

    # the units' run folders are in the store, linked from the campaign, never copied
    runs = sorted((folder / "runs").iterdir())
    assert len(runs) == 4
    for link in runs:
        assert link.is_symlink()
        target = link.resolve()
        assert target.parent == results.resolve() and (target / "metrics.json").is_file()
    for dirpath, _, files in os.walk(folder):  # no run file copied into the campaign
        assert "metrics.json" not in files and "experiment.json" not in files, dirpath
    listed = json.loads(gb(results, "list", "--json").stdout)
    assert len(listed) == 4  # the campaign folder is not a run

    # every document, as self-contained HTML and as Markdown
    names = {p.name for p in docs.iterdir()}
    for stem in (
        "index",
        "test-plan",
        "design-aem",
        "design-fs",
        "design-msg",
        "case-aem.flow",
        "case-aem.strict",
        "case-fs.posix",
        "case-msg.pingpong",
        "test-log",
        "incidents",
        "summary",
    ):
        assert {f"{stem}.html", f"{stem}.md"} <= names, stem
    for page in docs.glob("*.html"):
        text = page.read_text()
        assert "Content-Security-Policy" in text and "<script" not in text
        assert not re.search(r'(src|href)="(https?:)?//', text), page.name
    log = (docs / "test-log.md").read_text()
    for r in runs:
        assert f"../runs/{r.name}/report.html" in log
    assert "msg.pingpong" in log and "localhost" in log

    # status reads the campaign back; report writes the documents again, the same verdicts
    st = gb(results, "campaign", "status", str(camp))
    assert st.returncode == 0 and "3 of 4 units passed" in st.stdout, st.stdout + st.stderr
    again = gb(results, "campaign", "report", folder.name)
    assert again.returncode == 1 and summary(folder)["verdicts"] == s["verdicts"]


KILL = """\
name: killed
components:
  - id: aem
    units:
      - {id: first, spec: jobflow.yaml}
      - {id: second, spec: jobflow.yaml, set: [name=cmp-jf-second, trial.duration=8s]}
"""


def _wait_for(path: Path, pred: object, timeout: float = 300) -> list[dict[str, object]]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            evs = events(path)
        except (OSError, ValueError):
            evs = []
        if pred(evs):  # type: ignore[operator]
            return evs
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting on {path}")


def _start_kill_campaign(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """The KILL campaign started as a user starts it: (its process, results, file)."""
    results = tmp_path / "results"
    jobflow_spec(tmp_path)
    camp = tmp_path / "campaign.yaml"
    camp.write_text(KILL, encoding="utf-8")
    proc = subprocess.Popen(
        [str(BIN), "campaign", "run", str(camp)],
        env=cli_env(results),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    return proc, results, camp


def _second_unit_under_way(results: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The campaign's folder and its events once the second unit's trial is under way."""
    base = results / "campaigns"
    end = time.monotonic() + 300
    # the folder is made a moment before its campaign.json: wait for a whole campaign
    while time.monotonic() < end and not (base.is_dir() and campaign_dirs(results)):
        time.sleep(0.2)
    [folder] = campaign_dirs(results)
    evs = _wait_for(
        folder,
        lambda evs: any(e["event"] == "run" and e["unit"] == "aem.second" for e in evs),
    )
    time.sleep(1.0)  # the second unit's trial is under way, its grid up
    return folder, evs


def test_kill_9_during_the_second_unit_then_run_again(tmp_path: Path) -> None:
    proc, results, camp = _start_kill_campaign(tmp_path)
    try:
        folder, evs = _second_unit_under_way(results)
        first = next(e["run"] for e in evs if e["event"] == "end" and e["unit"] == "aem.first")
        before = tree_digest(results / first)
        unit_pid = next(
            e["pid"] for e in evs if e["event"] == "start" and e["unit"] == "aem.second"
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the unit's process goes with the campaign's (it does not run on unwatched)
    end = time.monotonic() + 60
    while time.monotonic() < end and psutil.pid_exists(unit_pid):
        if psutil.Process(unit_pid).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.2)
    assert not psutil.pid_exists(unit_pid) or (
        psutil.Process(unit_pid).status() == psutil.STATUS_ZOMBIE
    )
    assert json.loads((folder / "campaign.json").read_text())["status"] == "running"
    st = gb(results, "campaign", "status", str(camp))
    assert "stopped (killed)" in st.stdout, st.stdout + st.stderr
    dry = gb(results, "cleanup", folder.name, "--dry-run")  # cleanup knows campaign folders
    assert dry.returncode == 0 and folder.name in dry.stdout, dry.stdout + dry.stderr

    p = gb(results, "campaign", "run", str(camp))
    assert p.returncode == 0, p.stdout + p.stderr
    assert [f.name for f in campaign_dirs(results)] == [folder.name]  # resumed, not new
    assert tree_digest(results / first) == before  # the first unit's run: byte for byte
    evs = events(folder)
    starts = [(e["unit"], e["attempt"]) for e in evs if e["event"] == "start"]
    assert starts == [("aem.first", 1), ("aem.second", 1), ("aem.second", 2)]
    s = summary(folder)
    assert s["status"] == "complete" and s["counts"]["passed"] == 2
    [killed] = [i for i in s["incidents"] if i["kind"] == "killed"]
    assert killed["attempt"] == "aem.second.r1.a1" and killed["run"]
    log = (folder / "docs" / "test-log.md").read_text()
    assert "aem.second.r1.a1" in log and "aem.second.r1.a2" in log


def _attempt_processes(attempt: str) -> list[psutil.Process]:
    """The processes started for a unit's attempt (their environment names it)."""
    found = []
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if p.environ().get("GRIDBENCH_UNIT") == attempt:
                found.append(p)
    return found


def test_a_run_killed_with_its_campaign_is_cleaned_up_when_the_campaign_runs_again(
    tmp_path: Path,
) -> None:
    """kill -9 of the campaign and of its unit's process at once (the OOM killer, a
    machine's shutdown): the unit's embedded grid, in a session of its own, lives on.
    Run again, the campaign hands the killed run to ``gridbench cleanup``: the grid is
    stopped, the run is no longer "running", and the incident says so."""
    proc, results, camp = _start_kill_campaign(tmp_path)
    try:
        folder, evs = _second_unit_under_way(results)
        unit_pid = next(
            e["pid"] for e in evs if e["event"] == "start" and e["unit"] == "aem.second"
        )
        killed_run = next(
            e["run"] for e in evs if e["event"] == "run" and e["unit"] == "aem.second"
        )
        os.kill(unit_pid, signal.SIGKILL)  # both at once: neither can stop the grid
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = _attempt_processes("aem.second.r1.a1")
    assert left, "the killed unit left no process: nothing to clean up (the test needs a grid)"
    try:
        p = gb(results, "campaign", "run", str(camp))
        assert p.returncode == 0, p.stdout + p.stderr
        gone = psutil.wait_procs(left, timeout=30)[1] == []
        assert gone, [x.cmdline() for x in _attempt_processes("aem.second.r1.a1")]
        status = json.loads((results / killed_run / "experiment.json").read_text())["status"]
        assert status != "running", status
        [killed] = [i for i in summary(folder)["incidents"] if i["kind"] == "killed"]
        assert f"its run {killed_run} was cleaned up" in json.dumps(killed), killed
    finally:
        for x in _attempt_processes("aem.second.r1.a1"):
            x.kill()


SUSPEND = """\
name: suspended
components:
  - id: gate
    suspend: {{on: [failed], scope: {scope}, resumption: "the gate's threshold is met"}}
    units:
      - {{id: first, spec: gate.yaml}}
      - {{id: second, spec: jobflow.yaml}}
  - id: other
    units:
      - {{id: pingpong, spec: messaging.yaml}}
"""


def test_suspension_then_resumption(tmp_path: Path) -> None:
    results = tmp_path / "results"
    gate = jobflow_spec(tmp_path, "gate.yaml", name="cmp-gate")
    gate.write_text(
        gate.read_text() + "thresholds: [{metric: latency.overall.p99, op: '<', value: 0.0001}]\n"
    )
    jobflow_spec(tmp_path)
    net_spec(tmp_path)
    camp = tmp_path / "campaign.yaml"
    camp.write_text(SUSPEND.format(scope="component"), encoding="utf-8")
    p = gb(results, "campaign", "run", str(camp))
    assert p.returncode == 1, p.stdout + p.stderr
    [folder] = campaign_dirs(results)
    s = summary(folder)
    assert s["status"] == "suspended"
    assert s["verdicts"] == {
        "gate.first": "failed",
        "gate.second": "not run",
        "other.pingpong": "passed",
    }
    [unit] = [u for c in s["components"] for u in c["units"] if u["key"] == "gate.second"]
    assert "suspended" in unit["why"] and "gate.first" in unit["why"]
    plan = (folder / "docs" / "test-plan.md").read_text()
    assert "the gate's threshold is met" in plan  # the resumption criteria, in the plan

    # the cause fixed (the unit's own spec, not the campaign file): run again resumes
    gate.write_text(gate.read_text().replace("0.0001", "60"))
    p = gb(results, "campaign", "run", str(camp))
    assert p.returncode == 0, p.stdout + p.stderr
    assert [f.name for f in campaign_dirs(results)] == [folder.name]
    s = summary(folder)
    assert s["status"] == "complete" and s["counts"]["passed"] == 3
    starts = [(e["unit"], e["attempt"]) for e in events(folder) if e["event"] == "start"]
    # the unit that suspended runs again; the one that passed elsewhere does not
    assert starts == [
        ("gate.first", 1),
        ("other.pingpong", 1),
        ("gate.first", 2),
        ("gate.second", 1),
    ]
    [old] = [i for i in s["incidents"] if i["kind"] == "failed"]
    assert "superseded" in old["note"]


def test_suspension_of_the_whole_campaign(tmp_path: Path) -> None:
    results = tmp_path / "results"
    gate = jobflow_spec(tmp_path, "gate.yaml", name="cmp-gate")
    gate.write_text(
        gate.read_text() + "thresholds: [{metric: latency.overall.p99, op: '<', value: 0.0001}]\n"
    )
    jobflow_spec(tmp_path)
    net_spec(tmp_path)
    camp = tmp_path / "campaign.yaml"
    camp.write_text(SUSPEND.format(scope="campaign"), encoding="utf-8")
    p = gb(results, "campaign", "run", str(camp))
    assert p.returncode == 1, p.stdout + p.stderr
    s = summary(campaign_dirs(results)[0])
    assert s["verdicts"] == {
        "gate.first": "failed",
        "gate.second": "not run",
        "other.pingpong": "not run",
    }
    assert "campaign suspended" in (campaign_dirs(results)[0] / "docs" / "test-log.md").read_text()


REGRESSION = """\
name: trend
components:
  - id: aem
    units:
      - {id: flow, spec: jobflow.yaml}
"""


def test_a_changed_grid_is_named_a_regression_against_the_previous_campaign(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    spec = jobflow_spec(tmp_path, rate="4/s", trials=2, duration="4s")
    camp = tmp_path / "campaign.yaml"
    camp.write_text(REGRESSION, encoding="utf-8")
    p = gb(results, "campaign", "run", str(camp))
    assert p.returncode == 0, p.stdout + p.stderr
    # the grid changes under the same campaign: its CE checks job statuses one at a time
    spec.write_text(spec.read_text().replace("preset: batched", "preset: sequential"))
    p = gb(results, "campaign", "run", str(camp))
    assert p.returncode == 0, p.stdout + p.stderr  # the unit passes; its figures got worse
    first, second = campaign_dirs(results)
    s = summary(second)
    assert s["previous"]["campaign"] == first.name
    assert s["regression_count"] >= 1, s["previous"]
    regs = [i for i in s["incidents"] if i["kind"] == "regression"]
    assert regs and all(i["severity"] == "major" for i in regs)
    assert any("latency" in i["summary"] for i in regs), [i["summary"] for i in regs]
    text = (second / "docs" / "summary.md").read_text()
    assert "regressed" in text.lower() and first.name in text
    assert "regressed against campaign" in p.stdout + (second / "docs" / "incidents.md").read_text()
    # the trend over both campaigns
    trend = text.split("Trend over campaigns", 1)[1]
    assert first.name in trend and second.name in trend


EXCLUDE = """\
name: excluded
components:
  - id: aem
    units:
      - {id: flow, spec: jobflow.yaml, repetitions: 2}
"""
REASON = "the bridge was down in this trial (EDGI Fig. 19 against Fig. 20)"


def test_a_trial_excluded_by_hand_shows_everywhere_and_include_restores_it(
    tmp_path: Path,
) -> None:
    from fastapi.testclient import TestClient

    from gridbench.web.app import WebConfig, create_app

    results = tmp_path / "results"
    jobflow_spec(tmp_path, trials=2)
    camp = tmp_path / "campaign.yaml"
    camp.write_text(EXCLUDE, encoding="utf-8")
    p = gb(results, "campaign", "run", str(camp))
    assert p.returncode == 0, p.stdout + p.stderr
    [folder] = campaign_dirs(results)
    runs = [r["run"] for c in summary(folder)["components"] for u in c["units"] for r in u["runs"]]
    run = results / runs[0]
    measured = {
        p.name: p.read_bytes() for p in (run / "trials" / "p00-t01").iterdir() if p.is_file()
    }
    original = json.loads((run / "metrics.json").read_text())

    p = gb(results, "exclude", runs[0], "p00-t01", "--reason", REASON)
    assert p.returncode == 0, p.stdout + p.stderr
    metrics = json.loads((run / "metrics.json").read_text())
    summ = metrics["points"][0]["summary"]
    assert summ["used_trials"] == 1 and summ["excluded_by_hand"] == 1
    assert metrics["excluded_by_hand"][0]["reason"] == REASON
    # appended beside the run: no measured file rewritten
    assert {
        p.name: p.read_bytes()
        for p in (run / "trials" / "p00-t01").iterdir()
        if p.is_file() and p.name != "series.json"
    } == {k: v for k, v in measured.items() if k != "series.json"}
    assert REASON in (run / "exclusions.jsonl").read_text()
    assert REASON in (run / "report.html").read_text()  # the report
    shown = gb(results, "show", runs[0])
    assert "excluded by hand" in shown.stdout, shown.stdout
    cmp = gb(results, "compare", runs[0], runs[1])  # compare
    assert cmp.returncode == 0 and "excluded by hand" in cmp.stdout, cmp.stdout + cmp.stderr
    assert "the bridge was down" in cmp.stdout
    client = TestClient(create_app(WebConfig(results)), base_url="http://127.0.0.1")
    page = client.get(f"/experiments/{runs[0]}")  # the dashboard
    assert page.status_code == 200 and "the bridge was down in this trial" in page.text
    rep = gb(results, "campaign", "report", str(camp))  # the campaign's documents
    assert rep.returncode == 0, rep.stdout + rep.stderr
    incidents = (folder / "docs" / "incidents.md").read_text()
    assert "p00-t01 excluded by hand" in incidents and "the bridge was down" in incidents
    assert "the bridge was down in this trial" in (folder / "docs" / "incidents.html").read_text()

    p = gb(results, "include", runs[0], "p00-t01")
    assert p.returncode == 0, p.stdout + p.stderr
    restored = json.loads((run / "metrics.json").read_text())
    assert restored["points"][0]["summary"]["used_trials"] == 2
    assert restored["excluded_by_hand"] == []
    assert (
        restored["points"][0]["summary"]["latency"] == original["points"][0]["summary"]["latency"]
    )
    assert "excluded by hand" not in gb(results, "compare", runs[0], runs[1]).stdout
    lines = (run / "exclusions.jsonl").read_text().splitlines()
    assert [json.loads(x)["action"] for x in lines] == ["exclude", "include"]
    gb(results, "campaign", "report", str(camp))
    assert "excluded by hand" not in (folder / "docs" / "incidents.md").read_text()


@pytest.mark.parametrize("verb", ["validate", "plan"])
def test_validate_and_plan_name_every_unit(tmp_path: Path, verb: str) -> None:
    results = tmp_path / "results"
    jobflow_spec(tmp_path)
    net_spec(tmp_path)
    camp = tmp_path / "campaign.yaml"
    camp.write_text(FOUR.replace("  - id: fs\n    units: [{id: posix, spec: storage.yaml}]\n", ""))
    p = gb(results, "campaign", verb, str(camp))
    assert p.returncode == 0, p.stdout + p.stderr
    if verb == "plan":
        for unit in ("aem.flow", "aem.strict", "msg.pingpong"):
            assert unit in p.stdout
        assert "estimated in all" in p.stdout
        doc = json.loads(gb(results, "campaign", "plan", str(camp), "--json").stdout)
        assert [u["unit"] for u in doc["units"]] == ["aem.flow", "aem.strict", "msg.pingpong"]
        assert all(u["estimated_seconds"] > 0 for u in doc["units"])
        assert doc["estimated_seconds"] == pytest.approx(
            sum(u["estimated_seconds"] for u in doc["units"]), abs=0.5
        )
    else:
        assert "3 units in 2 families" in p.stdout
    assert not results.exists()  # nothing was run


PARALLEL = """\
name: parallel
components:
  - id: aem
    units:
      - {id: alpha, spec: jobflow.yaml, hosts: [alpha]}
      - {id: beta, spec: jobflow.yaml, set: [name=cmp-jf-beta], hosts: [beta]}
      - {id: gamma, spec: jobflow.yaml, set: [name=cmp-jf-gamma], hosts: [alpha]}
"""


def test_units_on_hosts_apart_run_at_once(tmp_path: Path) -> None:
    results = tmp_path / "results"
    jobflow_spec(tmp_path, duration="4s")
    camp = tmp_path / "campaign.yaml"
    camp.write_text(PARALLEL, encoding="utf-8")
    p = gb(results, "campaign", "run", str(camp), "--parallel", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    [folder] = campaign_dirs(results)
    t = {(e["event"], e["unit"]): e["t"] for e in events(folder) if e["event"] in ("start", "end")}
    # alpha and beta load different hosts: beta starts before alpha ends
    assert t[("start", "aem.beta")] < t[("end", "aem.alpha")]
    # gamma shares alpha's host: it waits for alpha
    assert t[("start", "aem.gamma")] >= t[("end", "aem.alpha")]
    assert summary(folder)["counts"]["passed"] == 3
