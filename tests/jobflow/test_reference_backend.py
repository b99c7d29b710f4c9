"""The reference backend against the live grid's injected faults, through the real runner."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from test_runner import events, run_spec


def failure_kinds(ev: pl.DataFrame) -> dict[str, int]:
    kinds = ev.filter(pl.col("stage") == "failed")["attrs"].str.json_path_match("$.kind")
    return dict(kinds.value_counts().iter_rows())


def test_full_ce_queue_rejects_and_times_out(tmp_path: Path) -> None:
    slow_ce = "{concurrency: 1, queue_limit: 2, service: {dist: fixed, mean: 1.0}}"
    out = run_spec(
        f"""
name: full-reject
backend: {{type: reference, options: {{grid: {{ce: {slow_ce}}}}}}}
job: {{runtime: 0.1s}}
load: {{model: open, rate: 20/s}}
trial: {{jobs: 10}}
timeouts: {{status_interval: 0.2s, drain: 20s}}
""",
        tmp_path,
    )
    kinds = failure_kinds(events(out))
    assert kinds.get("submit_rejected", 0) >= 6  # one running, two queued, the rest refused
    out = run_spec(
        f"""
name: full-timeout
backend: {{type: reference, options: {{grid: {{ce: {slow_ce},
  faults: {{on_full: timeout, hold_s: 0.3}}}}}}}}
job: {{runtime: 0.1s}}
load: {{model: open, rate: 20/s}}
trial: {{jobs: 10}}
timeouts: {{status_interval: 0.2s, drain: 20s}}
""",
        tmp_path,
    )
    kinds = failure_kinds(events(out))
    assert kinds.get("submit_timeout", 0) >= 5


def test_failing_jobs_are_recorded_with_server_stamps(tmp_path: Path) -> None:
    out = run_spec(
        """
name: failing
backend: {type: reference, options: {preset: batched, grid: {faults: {job_failure_prob: 1.0}}}}
job: {runtime: 0.1s}
load: {model: open, rate: 10/s}
trial: {jobs: 5}
timeouts: {status_interval: 0.2s, settle: 15s}
collectors: [{type: edgi, poll: 0.5s}]
""",
        tmp_path,
    )
    ev = events(out)
    assert failure_kinds(ev) == {"job_failed": 5}
    done = ev.filter(pl.col("stage") == "bridge_done")["attrs"].str.json_path_match("$.status")
    assert done.len() == 5 and set(done.to_list()) == {"Failed"}
