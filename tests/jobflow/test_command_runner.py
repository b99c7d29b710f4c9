"""The command backend through the real runner, with the demo CLI as the system under test."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gridbench.errors import BackendError
from gridbench.jobflow.backends.command.demo import job_state
from test_runner import events, run_spec, stage_counts


def spec(name: str, backend: dict[str, Any], body: str) -> str:
    """A spec whose backend section is given as data (JSON is YAML)."""
    return f"name: {name}\nbackend: {json.dumps({'type': 'command', 'options': backend})}\n" + body


def demo(state: Path, **over: Any) -> dict[str, Any]:
    return {"preset": "demo", "vars": {"state_dir": str(state)}, **over}


def failures(ev: pl.DataFrame) -> pl.DataFrame:
    f = ev.filter(pl.col("stage") == "failed")
    return f.select(
        pl.col("attrs").str.json_path_match("$.kind").alias("kind"),
        pl.col("attrs").str.json_path_match("$.message").alias("message"),
    )


def trial_info(out: Any) -> dict[str, Any]:
    info: dict[str, Any] = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    return info


def test_full_job_flow_with_one_status_call_per_sweep(tmp_path: Path) -> None:
    out = run_spec(
        spec(
            "cmd",
            demo(tmp_path / "state"),
            """
job: {command: [/bin/sleep, "0.5"]}
load: {model: open, rate: 10/s}
trial: {jobs: 6}
timeouts: {status_interval: 0.2s}
""",
        ),
        tmp_path / "results",
    )
    assert out.status == "complete"
    c = stage_counts(events(out))
    assert c["submit"] == c["submit_ack"] == c["client_done"] == 6
    assert "failed" not in c
    info = trial_info(out)
    cp = info["client_processes"]
    assert cp["by_op"]["submit"]["calls"] == 6
    # one CLI call per sweep for all jobs in flight, never one per job
    assert cp["by_op"]["status"]["calls"] == info["status_calls"] >= 1
    assert cp["calls"] == sum(v["calls"] for v in cp["by_op"].values())
    assert cp["cpu_s"] > 0 and cp["wall_s"] > 0
    assert info["background_queue"] == {"start": 0, "end": 0}  # from the queue template
    rt = out.run.read_experiment()["backend_runtime"]["command"]
    assert rt["preset"] == "demo" and rt["tested"] is True
    assert rt["client_processes_at_open"]["by_op"]["init"]["calls"] == 1


def test_failing_jobs_are_job_failures(tmp_path: Path) -> None:
    out = run_spec(
        spec(
            "cmdfail",
            demo(tmp_path / "state"),
            f"""
job: {{command: [{sys.executable}, -c, "raise SystemExit(4)"]}}
load: {{model: open, rate: 10/s}}
trial: {{jobs: 2}}
timeouts: {{status_interval: 0.2s}}
""",
        ),
        tmp_path / "results",
    )
    f = failures(events(out))
    assert f["kind"].to_list() == ["job_failed"] * 2
    assert set(f["message"].to_list()) == {"FAILED, exit code 4"}


def test_submit_pattern_that_never_matches_fails_each_job_clearly(tmp_path: Path) -> None:
    out = run_spec(
        spec(
            "cmdregex",
            demo(tmp_path / "state", submit={"pattern": r"^Job (?P<id>\d+) queued$"}),
            """
load: {model: open, rate: 10/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.2s, drain: 1s}
""",
        ),
        tmp_path / "results",
    )
    f = failures(events(out))
    assert f["kind"].to_list() == ["submit_error"] * 3
    for m in f["message"].to_list():
        assert "submit template" in m and "^Job (?P<id>" in m and "Submitted demo job" in m


def test_slow_client_times_out_as_submit_timeout(tmp_path: Path) -> None:
    backend = {
        "preset": "demo",
        "init": None,
        "vars": {"state_dir": str(tmp_path / "state"), "client_args": ["--delay", "5"]},
        "submit": {"timeout_s": 0.5},
    }
    out = run_spec(
        spec(
            "cmdslow",
            backend,
            """
load: {model: open, rate: 10/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.2s, drain: 1s}
""",
        ),
        tmp_path / "results",
    )
    f = failures(events(out))
    assert f["kind"].to_list() == ["submit_timeout"] * 2
    assert all("did not exit within 0.5s" in m for m in f["message"].to_list())
    cp = trial_info(out)["client_processes"]
    assert cp["by_op"]["submit"]["timeouts"] == 2 and cp["by_op"]["submit"]["calls"] == 2


def test_missing_client_program_stops_before_the_first_trial(tmp_path: Path) -> None:
    backend = demo(tmp_path / "state", submit={"argv": ["/nonexistent/qsub", "{name}"]})
    text = spec("cmdmissing", backend, "load: {model: open, rate: 10/s}\ntrial: {jobs: 2}\n")
    with pytest.raises(BackendError) as exc:
        run_spec(text, tmp_path / "results")
    assert "client program not found: '/nonexistent/qsub' (submit)" in str(exc.value)
    out = run_spec(
        spec(
            "cmdmissing2",
            {**backend, "check_executables": False},
            """
load: {model: open, rate: 10/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.2s, drain: 1s}
""",
        ),
        tmp_path / "results2",
    )
    f = failures(events(out))
    assert f["kind"].to_list() == ["submit_error"] * 2
    assert all("cannot start '/nonexistent/qsub'" in m for m in f["message"].to_list())


def test_abort_cancels_outstanding_jobs_through_the_cli(tmp_path: Path) -> None:
    state = tmp_path / "state"
    out = run_spec(
        spec(
            "cmdabort",
            demo(state),
            """
job: {command: [/bin/sleep, "60"]}
load: {model: open, rate: 5/s}
trial: {duration: 20s}
trials: 2
timeouts: {status_interval: 0.2s}
""",
        ),
        tmp_path / "results",
        abort_after=2.0,
    )
    assert out.status == "aborted"
    c = stage_counts(events(out))
    assert c["submit_ack"] >= 3
    assert c["cancelled"] == c["submit_ack"]
    jobs = [p for p in state.iterdir() if (p / "argv.json").exists()]
    assert len(jobs) == c["submit_ack"]
    assert {job_state(p)[0] for p in jobs} == {"CANCELLED"}  # the CLI ended every one
    assert trial_info(out)["client_processes"]["by_op"]["cancel"]["calls"] == 1


def test_resource_monitor_sees_the_client_processes(tmp_path: Path) -> None:
    """A slow CLI (each call sleeps 0.7 s): its processes are children of gridbench."""
    backend = demo(tmp_path / "state")
    backend["vars"]["client_args"] = ["--delay", "0.7"]
    out = run_spec(
        spec(
            "cmdres",
            backend,
            """
load: {model: open, rate: 4/s}
trial: {jobs: 4}
timeouts: {status_interval: 0.1s}
""",
        ),
        tmp_path / "results",
    )
    assert out.status == "complete"
    res = pl.read_csv(out.run.trial_dir("p00-t00") / "resources.csv")
    children = res["children"].to_list()
    assert len(children) >= 2 and max(children) > 0
    cp = trial_info(out)["client_processes"]
    assert cp["by_op"]["submit"]["calls"] == 4
    for op in ("submit", "status"):  # every such call slept 0.7 s before acting
        assert cp["by_op"][op]["wall_s"] >= 0.7 * cp["by_op"][op]["calls"]
