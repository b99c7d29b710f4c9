"""The retry load model (METHODS 1.9) against the real reference grid: a bounded CE queue
refuses part of a burst, the failures are resubmitted together, and the failure rate per
attempt is computed from the events alone (checked here against a count of our own)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from rich.console import Console

from gridbench.errors import SpecError
from gridbench.jobflow.analysis import analyze_run
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.runner import ExperimentOutcome
from gridbench.jobflow.loads.retry import RetryLoad
from gridbench.jobflow.report import build_report
from gridbench.jobflow.spec import load_spec_text, make_plan
from gridbench.report import write_reports
from gridbench.report.html import render_page
from gridbench.report.terminal import render_report
from test_runner import run_spec

# fast tiers: the CE holds at most `queue` jobs (queued or in preparation), 0.3 s each
FAST = "status_update: {policy: batched, per_job_cost_s: 0.0, interval_s: 0.05}"


def grid(queue: int = 3, faults: str = "{}", service_s: float = 0.3) -> str:
    ce = (
        f"{{concurrency: {queue}, queue_limit: {queue}, "
        f"service: {{dist: fixed, mean: {service_s}}}}}"
    )
    return f"{{type: reference, options: {{grid: {{ce: {ce}, {FAST}, faults: {faults}}}}}}}"


def spec(
    load: str, *, queue: int = 3, faults: str = "{}", extra: str = "", service_s: float = 0.3
) -> str:
    return f"""
name: retry
backend: {grid(queue, faults, service_s)}
job: {{runtime: 0.05s}}
load: {load}
timeouts: {{status_interval: 0.05s, drain: 20s}}
{extra}"""


def trial_info(out: ExperimentOutcome, tid: str = "p00-t00") -> dict[str, Any]:
    info: dict[str, Any] = json.loads((out.run.trial_dir(tid) / "trial.json").read_text())
    return info


def events_of(out: ExperimentOutcome, tid: str = "p00-t00") -> pl.DataFrame:
    return read_trial_log(out.run.trial_dir(tid))


def count_from_events(ev: pl.DataFrame, mode: str) -> dict[int, tuple[int, int]]:
    """(submitted, failed) per attempt, counted here from the raw events, not by the model."""
    attrs = pl.col("attrs").str.json_path_match
    subs = ev.filter(pl.col("stage") == "submit").select(
        "job", attrs("$.attempt").cast(pl.Int64).alias("attempt")
    )
    acked = set(ev.filter(pl.col("stage") == "submit_ack")["job"].to_list())
    broken = set(ev.filter(pl.col("stage").is_in(["failed", "cancelled"]))["job"].to_list())
    out: dict[int, tuple[int, int]] = {}
    for job, a in subs.iter_rows():
        bad = job not in acked if mode == "submit" else (job not in acked or job in broken)
        n, f = out.get(a, (0, 0))
        out[a] = (n + 1, f + int(bad))
    return out


def model_of(metrics: dict[str, Any], point: int = 0) -> dict[str, Any]:
    m: dict[str, Any] = metrics["points"][point]["trials"][0]["model"]
    return m


def test_bounded_ce_queue_refusals_are_resubmitted_until_none_fails(tmp_path: Path) -> None:
    out = run_spec(spec("{model: retry, jobs: 10, retries: 10}"), tmp_path)
    assert out.status == "complete"
    metrics = analyze_run(out.run.path, write=True)
    m = model_of(metrics)
    ev = events_of(out)
    counted = count_from_events(ev, "any")
    got = {int(k): (a["submitted"], a["failed"]) for k, a in m["attempts"].items()}
    assert got == counted
    # the CE holds 3 at a time: 3 of each attempt get through, the rest are refused
    assert [a["submitted"] for a in m["attempts"].values()] == [10, 7, 4, 1]
    assert [a["failed"] for a in m["attempts"].values()] == [7, 4, 1, 0]
    rates = [a["failure_rate"] for a in m["attempts"].values()]
    assert rates == sorted(rates, reverse=True) and rates[-1] == 0.0
    assert m["attempts"]["1"]["kinds"] == {"submit_rejected": 7}
    assert m["first_failure_rate"] == pytest.approx(0.7)
    assert m["average_failure_rate"] == pytest.approx(sum(rates) / 4)
    assert (m["attempts_used"], m["never_succeeded"], m["submissions"]) == (4, 0, 22)
    assert m["statement"] == (
        "10 jobs at once: 70% failed at attempt 1, 57% at 2, 25% at 3, none at 4 (average 38%)"
    )
    # what the runner decided (trial.json) is what the events say
    info = trial_info(out)
    assert [(a["submitted"], a["failed"]) for a in info["retry"]["attempts"]] == list(got.values())
    assert info["retry"]["never_succeeded"] == 0 and info["planned_jobs"] == 22
    # each submission is its own job, named by its request index (attempt-1)*M + slot
    subs = ev.filter(pl.col("stage") == "submit")
    attrs = subs["attrs"].str.json_path_match
    idx = subs["job"].str.slice(-6).cast(pl.Int64)
    expect = (attrs("$.attempt").cast(pl.Int64) - 1) * 10 + attrs("$.slot").cast(pl.Int64)
    assert (idx == expect).all() and set(attrs("$.retry_on").to_list()) == {"any"}
    # every slot succeeded exactly once; attempt 1 went out at the same instant
    ok = subs.filter(pl.col("job").is_in(list(set(ev["job"]) - set(_failed_jobs(ev)))))
    assert sorted(ok["attrs"].str.json_path_match("$.slot").cast(pl.Int64).to_list()) == list(
        range(10)
    )
    first = subs.filter(attrs("$.attempt") == "1")["t_ns"]
    assert (first.max() - first.min()) / 1e9 < 0.1  # type: ignore[operator]
    point = metrics["points"][0]
    assert point["trials"][0]["valid"]
    assert point["summary"]["model"]["attempts"]["2"]["failure_rate"]["mean"] == pytest.approx(
        4 / 7
    )


def _failed_jobs(ev: pl.DataFrame) -> list[str]:
    acked = set(ev.filter(pl.col("stage") == "submit_ack")["job"])
    subs = set(ev.filter(pl.col("stage") == "submit")["job"])
    broken = set(ev.filter(pl.col("stage").is_in(["failed", "cancelled"]))["job"])
    return sorted((subs - acked) | broken)


def test_retry_on_any_retries_failed_jobs_and_submit_does_not(tmp_path: Path) -> None:
    extra = "job: {runtime: 0.05s, fail_fraction: 0.5}\n"
    results = {}
    for mode in ("any", "submit"):
        text = spec(f"{{model: retry, jobs: 8, retries: 4, retry_on: {mode}}}", queue=20)
        text = text.replace("job: {runtime: 0.05s}\n", extra)
        out = run_spec(text, tmp_path / mode)
        ev = events_of(out)
        m = model_of(analyze_run(out.run.path))
        got = {int(k): (a["submitted"], a["failed"]) for k, a in m["attempts"].items()}
        assert got == count_from_events(ev, mode)
        results[mode] = (m, ev)
    m_any, _ = results["any"]
    m_sub, ev_sub = results["submit"]
    job_failed = ev_sub.filter(pl.col("stage") == "failed")["attrs"].str.json_path_match("$.kind")
    assert (job_failed == "job_failed").sum() > 0  # jobs did fail...
    assert m_sub["attempts_used"] == 1 and m_sub["attempts"]["1"]["failed"] == 0  # ...not retried
    assert m_sub["retry_on"] == "submit" and m_sub["never_succeeded"] == 0
    first = m_any["attempts"]["1"]
    assert first["failed"] > 0 and first["kinds"] == {"job_failed": first["failed"]}
    assert m_any["attempts"]["2"]["submitted"] == first["failed"]  # the failures, together
    assert m_any["retry_on"] == "any"


def test_retries_bound_the_attempts_on_a_grid_that_always_refuses(tmp_path: Path) -> None:
    load = "{model: retry, jobs: 4, retries: 3, pause: 0.05s}"
    out = run_spec(spec(load, faults="{submit_failure_prob: 1.0}"), tmp_path)
    metrics = analyze_run(out.run.path)
    m = model_of(metrics)
    assert (m["attempts_used"], m["never_succeeded"], m["submissions"]) == (4, 4, 16)
    assert [a["failure_rate"] for a in m["attempts"].values()] == [1.0] * 4
    assert m["average_failure_rate"] == 1.0 and m["first_failure_rate"] == 1.0
    assert m["attempts"]["4"]["kinds"] == {"submit_error": 4}
    assert m["statement"].endswith("(average 100%); 4 never succeeded")
    # refusals are the measurement: the trial stays valid although no job completed
    assert metrics["points"][0]["trials"][0]["valid"]
    assert trial_info(out)["retry"]["never_succeeded"] == 4


def test_a_job_not_ended_within_the_drain_is_cancelled_and_counts_failed(
    tmp_path: Path,
) -> None:
    text = spec("{model: retry, jobs: 2, retries: 1}", queue=10).replace(
        "job: {runtime: 0.05s}", "job: {runtime: 30s}"
    )
    text = text.replace("drain: 20s", "drain: 0.5s")
    out = run_spec(text, tmp_path)
    m = model_of(analyze_run(out.run.path))
    assert [a["failed"] for a in m["attempts"].values()] == [2, 2]
    assert m["attempts"]["1"]["kinds"] == {"cancelled by gridbench": 2}
    info = trial_info(out)
    assert [a["not_ended"] for a in info["retry"]["attempts"]] == [2, 2]
    assert any("timeouts.drain" in n for n in info["notes"])


def test_sweep_over_the_jobs_at_once_changes_the_first_failure_rate(tmp_path: Path) -> None:
    # (the backend is opened once per run: a sweep over backend options would not change
    # the grid, so the sweep is over M against a CE that holds 3 jobs)
    text = spec(  # 2 s in the CE: none leaves it while a burst of 12 is still submitted
        "{model: retry, jobs: 3, retries: 0, retry_on: submit}",
        extra="sweep: {jobs: [3, 6, 9, 12]}\n",
        service_s=2.0,
    )
    out = run_spec(text, tmp_path)
    metrics = analyze_run(out.run.path, write=True)
    firsts = [model_of(metrics, i)["first_failure_rate"] for i in range(4)]
    assert firsts == pytest.approx([0.0, 3 / 6, 6 / 9, 9 / 12])
    growth = [g for g in metrics["growth"] if g["quantity"] == "model.first_failure_rate"]
    assert growth and growth[0]["y"] == pytest.approx(firsts)
    assert growth[0]["x"] == [3.0, 6.0, 9.0, 12.0]
    # the report shows the failure rate per attempt, in text and in HTML
    report = build_report(metrics, {})
    console = Console(file=io.StringIO(), width=200, record=True)
    render_report(report, console, verbose=True)
    txt = console.export_text()
    assert "Retry: failure rate per attempt" in txt and "66.7%" in txt and "50.0%" in txt
    page = render_page(report)
    assert "Retry: failure rate per attempt" in page and "75.0%" in page
    # the raw table goes to CSV: one row per attempt, then the mean of the rates
    paths = write_reports(out.run.path, report)
    csv = pl.read_csv(paths["retry"])
    assert csv["attempt"].to_list() == ["1", "average"] * 4
    assert csv.filter(pl.col("attempt") == "1")["failure_rate"].to_list() == pytest.approx(firsts)


@pytest.mark.parametrize(
    ("load", "where", "says"),
    [
        ("{model: retry, jobs: 3, retries: -1}", "load.retries", "greater than or equal to 0"),
        ("{model: retry, jobs: 3, retrys: 2}", "load.retrys", "xtra"),
        ("{model: retry, jobs: 3, submitters: 2}", "load.submitters", "model: batch"),
        ("{model: retry, jobs: 3, retry_on: never}", "load.retry_on", "'any' or 'submit'"),
        ("{model: retry}", "", "needs load.jobs"),
    ],
)
def test_bad_specs_are_one_clear_error(load: str, where: str, says: str) -> None:
    with pytest.raises(SpecError) as e:
        load_spec_text(f"name: x\nbackend: {{type: noop}}\nload: {load}\n", "exp.yaml")
    msg = str(e.value)
    assert where in msg and says in msg


def test_plan_and_sweep_keys() -> None:
    spec_, data = load_spec_text(
        "name: x\nbackend: {type: noop}\nload: {model: retry, jobs: 35}\n"
        "sweep: {jobs: [5, 15, 25, 35], retries: [0, 10]}\n"
    )
    plan = make_plan(spec_, data).to_dict()
    # the most a trial can submit, M × (R + 1): safety caps hold whatever fails
    jobs = [p["jobs_per_trial"] for p in plan["points"]]
    assert jobs == [5, 55, 15, 165, 25, 275, 35, 385]
    with pytest.raises(SpecError, match=r"safety.max_jobs"):
        text = "name: x\nbackend: {type: noop}\nload: {model: retry, jobs: 35}\n"
        make_plan(*load_spec_text(text + "safety: {max_jobs: 100}\n"))
    load = spec_.load
    assert isinstance(load, RetryLoad)
    assert (load.retries, load.retry_on, load.pause) == (10, "any", 0.0)


def test_an_abort_while_waiting_ends_the_trial_promptly(tmp_path: Path) -> None:
    text = spec("{model: retry, jobs: 4, retries: 5, agents: 2}", queue=10).replace(
        "job: {runtime: 0.05s}", "job: {runtime: 30s}"
    )
    t0 = time.monotonic()
    out = run_spec(text, tmp_path, abort_after=1.5)
    assert time.monotonic() - t0 < 15
    assert out.status == "aborted"
    info = trial_info(out)
    (attempt,) = info["retry"]["attempts"]  # no retry after the abort
    assert attempt["interrupted"] and attempt["submitted"] == 4 and attempt["failed"] == 4
    m = model_of(analyze_run(out.run.path))  # the same from the events
    assert m["attempts"]["1"]["kinds"] == {"cancelled by gridbench": 4}
    ev = events_of(out)
    subs = ev.filter(pl.col("stage") == "submit")
    assert set(subs["agent"]) == {"agent-0", "agent-1"}  # attempt 1 spread over the agents
    # the trial cancelled what was left (never load left behind)
    by = ev.filter(pl.col("stage") == "cancelled")["attrs"].str.json_path_match("$.by")
    assert by.to_list() == ["gridbench"] * 4
