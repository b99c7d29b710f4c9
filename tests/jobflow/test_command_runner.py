"""The command backend through the real runner, with the demo CLI as the system under test.

What every backend does (jobs end with their stage chain, a failing command, abort, open()
against an absent server) is tested once for all in test_backend_suite.py; here, what only
the command backend has (its templates' failures, slow and missing clients, client cost).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gridbench.errors import BackendError
from test_runner import events, run_spec


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
