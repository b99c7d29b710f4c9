"""The command backend's sge preset against the live Grid Engine cell (tests/sge_cluster.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sge_cluster import SgeCell  # the fixture sge comes from conftest.py: one cell per session
from test_command_runner import failures, spec, trial_info
from test_runner import events, run_spec, stage_counts

pytestmark = pytest.mark.e2e


def options(cell: SgeCell, workdir: Path, **over: Any) -> dict[str, Any]:
    return {"preset": "sge", "env": cell.env, "workdir": str(workdir), **over}


def test_sge_preset_runs_and_fails_jobs_through_the_runner(sge: SgeCell, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    out = run_spec(
        spec(
            "cmd-sge",
            options(sge, work),
            f"""
job: {{command: [/bin/sh, -c, "sleep 0.5; exit 0", "$(touch {work}/PWNED)"]}}
load: {{model: open, rate: 10/s}}
trial: {{jobs: 4}}
timeouts: {{status_interval: 0.3s, drain: 60s}}
""",
        ),
        tmp_path / "results",
    )
    assert not (work / "PWNED").exists()  # the argument stayed inert on the exec host
    assert out.status == "complete"
    c = stage_counts(events(out))
    assert c["submit_ack"] == c["client_done"] == 4 and "failed" not in c
    info = trial_info(out)
    cp = info["client_processes"]
    assert cp["by_op"]["submit"]["calls"] == 4  # four qsub processes
    assert cp["by_op"]["status"]["calls"] == info["status_calls"]  # one qstat per sweep
    # each ended job left qstat and was looked up once with qacct
    assert cp["by_op"]["finished"]["calls"] >= 4

    bad = run_spec(
        spec(
            "cmd-sge-fail",
            options(sge, work),
            """
job: {command: [/bin/sh, -c, "exit 3"]}
load: {model: open, rate: 10/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.3s, drain: 60s}
""",
        ),
        tmp_path / "results2",
    )
    f = failures(events(bad))
    assert f["kind"].to_list() == ["job_failed", "job_failed"]
    assert all("3" in m for m in f["message"].to_list()), f["message"].to_list()
