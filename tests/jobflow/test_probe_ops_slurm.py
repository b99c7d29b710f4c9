"""The probe model's operations against the live test cluster (tests/slurm_cluster.py):
status of a real held job, cancels of real jobs, reservations, tokens; and the cleanup of
a reservation a crashed run left behind."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from rich.console import Console

from backend_run import backend_ids, run_with, trial
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.slurm.backend import SlurmBackend
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.cleanup import cleanup_run
from gridbench.jobflow.experiment.runner import ExperimentOutcome
from gridbench.jobflow.metrics_schema import validate_metrics
from gridbench.jobflow.report import build_report
from gridbench.jobflow.report.rows import all_tables
from gridbench.report import render_report
from slurm_cluster import SlurmCluster, slurm_fixture  # noqa: F401 (fixture)


def backend_for(cluster: SlurmCluster) -> SlurmBackend:
    b = create_backend("slurm", {"conf": str(cluster.conf)})
    assert isinstance(b, SlurmBackend)
    return b


def probe(
    cluster: SlurmCluster,
    tmp: Path,
    operation: str,
    extra: str = "",
    count: int = 4,
    gap: str = "0.05s",
) -> ExperimentOutcome:
    """A probe run of ``operation``: ``count`` single calls ``gap`` apart."""
    text = f"""
name: probe-{operation}
backend: {{type: slurm, options: {{conf: {cluster.conf}}}}}
job: {{command: [sleep, "300"]}}
load: {{model: probe, operation: {operation}, count: {count}, gap: {gap}}}
timeouts: {{status_interval: 0.2s, drain: 30s}}
{extra}"""
    out = run_with(text, tmp, backend_for(cluster))
    assert out.status == "complete", out
    return out


def ops(ev: pl.DataFrame, op: str, stage: str = "op_end") -> list[dict[str, Any]]:
    """The attrs of the ``stage`` records of ``op``, in event order."""
    a = pl.col("attrs")
    rows = ev.filter((pl.col("stage") == stage) & (a.str.json_path_match("$.op") == op))
    return [json.loads(x) for x in rows["attrs"].to_list()]


def report_text(metrics: dict[str, Any]) -> str:
    console = Console(record=True, width=250)
    render_report(build_report(metrics, {}), console, verbose=True)
    return console.export_text()


def model(out: ExperimentOutcome) -> dict[str, Any]:
    metrics = analyze_run(out.run.path, write=True)
    validate_metrics(metrics)
    t = metrics["points"][0]["trials"][0]
    assert t["valid"], t["validity"]
    m: dict[str, Any] = t["model"]
    return m


def test_status_probes_a_real_held_job(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = probe(slurm, tmp_path, "status")
    ev, _ = trial(out)
    held = backend_ids(ev)
    assert len(held) == 1  # one real job, submitted held before the probes
    calls = ops(ev, "status")
    assert len(calls) == 4
    # every call asked about that real job, and Slurm said it was queued (held)
    assert {c["job"] for c in calls} == set(held)
    assert {c["state"] for c in calls} == {"queued"} and not any("error" in c for c in calls)
    assert not ev["attrs"].str.contains("gridbench-probe-none").any()
    # cancelled at the end: the controller lists it no more as pending
    assert held[0] not in slurm.job_ids()
    m = model(out)
    assert m["operation"] == "status" and m["single"]["n"] == 4 and m["single"]["errors"] == 0
    assert m["statement"].startswith("status-query time: ")


def test_each_cancel_probe_cancels_a_real_job(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = probe(slurm, tmp_path, "cancel")
    ev, _ = trial(out)
    held = backend_ids(ev)
    cancelled = [a["job"] for a in ops(ev, "cancel")]
    assert len(held) == 4 and cancelled == held  # each probe cancelled the job held before it
    assert not set(held) & set(slurm.job_ids())  # squeue shows them gone
    m = model(out)
    assert (m["single"]["n"], m["single"]["errors"], m["calls"]) == (4, 0, 4)


def test_reservations_are_created_and_deleted(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = probe(slurm, tmp_path / "reserve", "reserve")
    ev, _ = trial(out)
    made = ops(ev, "reserve")
    names = [a["reservation"] for a in made]
    assert len(set(names)) == 4 and not any("error" in a for a in made)
    assert all(
        n.startswith("gridbench-") and n.endswith(f"-p00-t00-{i + 1}") for i, n in enumerate(names)
    )
    # each was released after it was timed (a setup call, not a probe)
    released = ops(ev, "release")
    assert [a["reservation"] for a in released] == names
    assert {a["probe"] for a in released} == {"setup"}
    shown = slurm.run("scontrol", "show", "reservation")
    assert not any(n in shown for n in names)
    m = model(out)
    assert m["operation"] == "reserve" and m["single"]["n"] == 4
    assert m["statement"].startswith("reservation time: ")

    rel = model(probe(slurm, tmp_path / "release", "release"))
    assert rel["operation"] == "release" and rel["single"]["n"] == 4
    assert rel["statement"].startswith("reservation-release time: ")


def test_tokens_with_the_controllers_cpu_per_request(slurm: SlurmCluster, tmp_path: Path) -> None:
    ctld = slurm.procs["slurmctld"].pid
    extra = f"server_processes: [{{pid: {ctld}, label: slurmctld}}]\n"
    # 2 s: the server is sampled every 0.5 s
    out = probe(slurm, tmp_path, "credential", extra, count=9, gap="0.25s")
    ev, _ = trial(out)
    assert ev.filter(pl.col("stage") == "submit").height == 0  # tokens only, no job
    m = model(out)
    assert (m["single"]["n"], m["single"]["errors"]) == (9, 0)  # every token issued
    assert m["statement"].startswith("credential-issue time: ")
    metrics = analyze_run(out.run.path)
    srv = metrics["points"][0]["trials"][0]["server_resources"]["slurmctld"]
    assert srv["operations"] == 9 and srv["samples"] >= 2
    assert srv["cpu_s_per_op"] == pytest.approx(srv["cpu_s"] / 9)
    assert srv["client_cpu_s_per_op"] is not None
    # the report names the operation, beside the server's and client's CPU per call
    text = report_text(metrics)
    assert "credential-issue time" in text and "server CPU ms/op" in text
    row = next(r for r in all_tables(metrics)["server_processes"] if r["label"] == "slurmctld")
    assert row["operations"] == 9
    assert row["client_cpu_ms_per_op"] == pytest.approx(srv["client_cpu_s_per_op"] * 1e3)


def test_cleanup_deletes_a_reservation_a_crash_left(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = probe(slurm, tmp_path, "reserve")
    tdir = out.run.trial_dir("p00-t00")
    ev = read_trial_log(tdir)
    # as if the run had died between a reserve and its release: the reservation exists
    # and the log has no release of it
    name = ops(ev, "reserve")[0]["reservation"]
    slurm.run(
        "scontrol", "create", "reservation", f"reservationname={name}", "starttime=now",
        "duration=10", "nodes=ALL", "flags=ignore_jobs", "users=root",
    )  # fmt: skip
    release = pl.col("attrs").str.contains(f'"reservation":"{name}"') & pl.col(
        "attrs"
    ).str.contains('"op":"release"')
    (tdir / "events.arrows").unlink()  # the log rewritten without the release
    with ArrowEventLog(tdir / "events.arrows") as log:
        log.write_frame(ev.filter(~release))
    # force: the runner recorded in experiment.json is this test process, still alive
    dry = asyncio.run(cleanup_run(out.run, dry_run=True, force=True))
    assert any(f"would delete {name}" in line for line in dry.plan)
    assert name in slurm.run("scontrol", "show", "reservation")
    done = asyncio.run(cleanup_run(out.run, force=True))
    assert done.released_reservations == 1 and not done.errors
    assert name not in slurm.run("scontrol", "show", "reservation")
    again = asyncio.run(cleanup_run(out.run, force=True))  # logged as released: no more
    assert again.released_reservations == 0 and not any(name in x for x in again.plan)
