"""A run that lost an agent or left work says so in its status and headline (issue
22.7), read from what the run folder records: the session's real job-flow run, with one
trial's trial.json saying, as the controller writes it, that an agent was lost. (The live
path, a Dask agent killed mid-trial, belongs to the agents tests.)"""

from __future__ import annotations

import json
from pathlib import Path

from family_runs import copy_run, gb
from gridbench.jobflow.experiment.cleanup import final_state
from gridbench.states import COMPLETE, NEEDS_CLEANUP, state_tone
from gridbench.store.layout import RunDir

LOST = "agent-1 stopped answering: no heartbeat for 5 s"


def _lose_an_agent(run: Path) -> None:
    path = run / "trials" / "p01-t00" / "trial.json"
    info = json.loads(path.read_text())
    info.setdefault("agents", {})["agent-1"] = {"host": "node-b", "lost": LOST, "events": 0}
    path.write_text(json.dumps(info), encoding="utf-8")


def test_a_lost_agent_shows_in_status_headline_and_list(jobflow_run: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    run = copy_run(jobflow_run, root)
    assert final_state(RunDir(run), COMPLETE) == COMPLETE  # as it ran: nothing left
    _lose_an_agent(run)
    state = final_state(RunDir(run), COMPLETE)
    assert state == NEEDS_CLEANUP and state_tone(state) == "warn"
    assert final_state(RunDir(run), "aborted") == "aborted"  # a worse end stays said
    RunDir(run).update_experiment(status=state)  # what the runner records at its end
    p = gb(root, "analyze", str(run))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    out = " ".join(p.stdout.split())  # the headline box wraps its lines
    assert "The run left work behind: 1 agent(s) lost (agent-1)" in out, p.stdout
    assert "run 'gridbench cleanup' on it" in out, p.stdout
    m = json.loads((run / "metrics.json").read_text())
    assert m["left_behind"] == {
        "agents_lost": [{"trial_id": "p01-t00", "agent": "agent-1", "error": LOST}],
        "jobs_lost": 0,
    }
    [row] = json.loads(gb(root, "list", "--json").stdout)
    assert row["status"] == "needs cleanup"
    # cleanup finds nothing more to cancel (the jobs all ended): the run is complete again
    c = gb(root, "cleanup", str(run), "--yes")
    assert c.returncode == 0, c.stdout[-2000:] + c.stderr[-2000:]
    assert json.loads((run / "experiment.json").read_text())["status"] == COMPLETE


def test_jobs_a_trial_could_not_cancel_need_cleanup(jobflow_run: Path, tmp_path: Path) -> None:
    run = copy_run(jobflow_run, tmp_path / "results")
    path = run / "trials" / "p00-t00" / "trial.json"
    info = json.loads(path.read_text())
    info["cancel_error"] = "cancel refused: HTTP 503"  # what _give_up records; jobs left lost
    path.write_text(json.dumps(info), encoding="utf-8")
    assert final_state(RunDir(run), COMPLETE) == NEEDS_CLEANUP


def test_an_intact_run_says_nothing_of_it(jobflow_run: Path) -> None:
    m = json.loads((jobflow_run / "metrics.json").read_text())
    assert m["left_behind"] == {"agents_lost": [], "jobs_lost": 0}
