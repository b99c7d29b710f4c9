"""Held submission on Grid Engine (``qsub -h``) for the probe's status and cancel
operations, against the live cell (tests/sge_cluster.py)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from backend_run import backend_ids, run_with, trial
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.sge.backend import SgeBackend
from sge_cluster import SgeCell  # the fixture sge comes from conftest.py: one cell per session

pytestmark = pytest.mark.e2e


def test_status_and_cancel_probe_held_sge_jobs(sge: SgeCell, tmp_path: Path) -> None:
    for op in ("status", "cancel"):
        backend = create_backend("sge", {"env": sge.env})
        assert isinstance(backend, SgeBackend)
        out = run_with(
            f"""
name: sge-probe-{op}
backend: {{type: sge}}
job: {{command: [sleep, "300"]}}
load: {{model: probe, operation: {op}, count: 3, gap: 0.05s}}
timeouts: {{status_interval: 0.3s, drain: 40s}}
""",
            tmp_path / op,
            backend,
        )
        assert out.status == "complete"
        ev, _ = trial(out)
        ids = backend_ids(ev)
        ends = ev.filter(
            (pl.col("stage") == "op_end") & (pl.col("attrs").str.json_path_match("$.op") == op)
        )
        calls = [json.loads(a) for a in ends["attrs"].to_list()]
        assert len(calls) == 3 and not any("error" in c for c in calls), calls
        if op == "status":
            assert len(ids) == 1 and {c["job"] for c in calls} == set(ids)
            assert {c["state"] for c in calls} == {"queued"}  # hqw: held, never started
        else:
            assert [c["job"] for c in calls] == ids and len(ids) == 3
        # none of them ever started, and none is left in the cell
        assert ev.filter(pl.col("stage") == "sge_start").height == 0
        listed = sge.run("qstat", "-u", "*", check=False)
        assert not any(i in listed.split() for i in ids)
