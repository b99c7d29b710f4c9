"""Two agent processes submitting to one live slurmctld, each with its own backend
instance (its own sbatch/squeue calls): every job once, both agents' jobs in Slurm's own
records, the schedule split, and nothing left queued."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from gridbench.jobflow.events.trial_log import read_trial_log
from slurm_cluster import SlurmCluster, slurm_fixture  # noqa: F401 (fixture)
from test_runner import run_spec


def test_two_agents_submit_to_one_slurmctld(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = run_spec(
        f"""
name: two-submit-hosts
backend: {{type: slurm, options: {{conf: "{slurm.conf}"}}}}
job: {{command: [sh, -c, "true"]}}
load: {{model: open, rate: 8/s, agents: {{processes: 2}}}}
trial: {{duration: 2s}}
timeouts: {{status_interval: 0.2s, drain: 60s, settle: 0s}}
""",
        tmp_path,
    )
    assert out.status == "complete", out.trials
    tdir = out.run.trial_dir("p00-t00")
    info = json.loads((tdir / "trial.json").read_text())
    ev = read_trial_log(tdir)
    acks = ev.filter(pl.col("stage") == "submit_ack")
    assert acks.height == 16 and acks["job"].n_unique() == 16
    assert dict(acks.group_by("agent").len().iter_rows()) == {"agent-0": 8, "agent-1": 8}
    ids = acks["attrs"].str.json_path_match("$.backend_id").to_list()
    assert len(set(ids)) == 16 and all(i and i.isdigit() for i in ids)
    # Slurm's own record of every job: the ids the agents got are real Slurm jobs
    for bid in ids:
        shown = slurm.run("scontrol", "-o", "show", "job", str(bid))
        assert f"JobId={bid}" in shown and "JobState=COMPLETED" in shown, shown
    done = ev.filter(pl.col("stage") == "client_done")
    assert done["job"].n_unique() == 16  # each agent saw its own jobs end
    for name in ("agent-0", "agent-1"):
        a = info["agents"][name]
        assert 0 < a["clock_uncertainty_ns"] < 50_000_000
        assert a["offset_before"]["probes"] == 32
    assert slurm.job_ids() == []
