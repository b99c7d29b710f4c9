"""The runner against in-process (noop) and real-process (local) backends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import polars as pl
import pytest

from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.runner import ExperimentOutcome, ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan


def run_spec(text: str, root: Path, *, abort_after: float | None = None) -> ExperimentOutcome:
    spec, data = load_spec_text(text)
    runner = ExperimentRunner(make_plan(spec, data), data, root)

    async def main() -> ExperimentOutcome:
        if abort_after is not None:
            asyncio.get_running_loop().call_later(abort_after, runner.abort)
        return await runner.execute()

    return asyncio.run(main())


def events(out: ExperimentOutcome, tid: str = "p00-t00") -> pl.DataFrame:
    return read_trial_log(out.run.trial_dir(tid))


def stage_counts(ev: pl.DataFrame) -> dict[str, int]:
    return dict(ev.group_by("stage").len().iter_rows())


def test_open_loop_records_every_stage(tmp_path: Path) -> None:
    out = run_spec(
        """
name: open
backend: {type: noop, options: {runtime_s: 0.2}}
load: {model: open, rate: 40/s, agents: 3}
trial: {duration: 1s}
timeouts: {status_interval: 0.1s}
""",
        tmp_path,
    )
    assert out.status == "complete"
    ev = events(out)
    c = stage_counts(ev)
    assert c["intended"] == c["submit"] == c["submit_ack"] == c["client_done"] == 40
    assert set(ev["agent"].unique()) == {"agent-0", "agent-1", "agent-2"}
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    gaps = wide.sort("intended")["intended"].diff().drop_nulls()
    assert gaps.min() == gaps.max() == 25_000_000  # the schedule, not the call durations
    assert ((wide["client_done"] - wide["submit"]) >= 200_000_000).all()
    info = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    assert info["status"] == "complete" and info["planned_jobs"] == 40
    assert info["offered_rate_per_s"] == pytest.approx(40.0)
    assert info["status_calls"] >= 1
    exp = out.run.read_experiment()
    assert exp["status"] == "complete" and exp["trials_done"] == 1


def test_slow_backend_gives_late_and_dropped(tmp_path: Path) -> None:
    out = run_spec(
        """
name: late
backend: {type: noop, options: {submit_delay_s: 0.2}}
load: {model: open, rate: 20/s, pool: 1, max_lateness: 0.5s, late_threshold: 50ms}
trial: {duration: 1s}
timeouts: {status_interval: 0.1s}
""",
        tmp_path,
    )
    p = out.trials[0].progress
    assert p.dropped > 0 and p.late > 0
    ev = events(out)
    kinds = ev.filter(pl.col("stage") == "failed")["attrs"].str.json_path_match("$.kind")
    assert (kinds == "dropped").sum() == p.dropped
    assert stage_counts(ev)["intended"] == 20  # dropped jobs still have their intended time


def test_rejected_submissions_are_failures(tmp_path: Path) -> None:
    out = run_spec(
        """
name: rej
backend: {type: noop, options: {runtime_s: 5, reject_above: 5}}
load: {model: open, rate: 20/s}
trial: {jobs: 10}
timeouts: {status_interval: 0.1s, drain: 0.5s}
""",
        tmp_path,
    )
    ev = events(out)
    kinds = ev.filter(pl.col("stage") == "failed")["attrs"].str.json_path_match("$.kind")
    assert (kinds == "submit_rejected").sum() == 5
    # accepted but not ended by the drain time-out: cancelled, never left on the backend
    assert stage_counts(ev)["cancelled"] == 5
    assert (kinds == "lost").sum() == 0


def test_without_cancel_on_abort_leftovers_are_lost_and_cleanup_finds_them(
    tmp_path: Path,
) -> None:
    from gridbench.jobflow.run.outstanding import outstanding_jobs

    out = run_spec(
        """
name: lost
backend: {type: noop, options: {runtime_s: 30}}
load: {model: open, rate: 20/s}
trial: {duration: 5s}
timeouts: {status_interval: 0.1s, drain: 0.3s}
safety: {cancel_on_abort: false}
""",
        tmp_path,
        abort_after=1.0,  # ~0.2 s of set-up first: 0.5 s left 5-6 jobs, 2-4 under load
    )
    ev = events(out)
    kinds = ev.filter(pl.col("stage") == "failed")["attrs"].str.json_path_match("$.kind")
    acked = stage_counts(ev)["submit_ack"]
    assert acked >= 5 and (kinds == "lost").sum() == acked
    assert "cancelled" not in stage_counts(ev)
    assert outstanding_jobs(ev).height == acked  # lost jobs are left for cleanup


def test_sustain_keeps_n_jobs_per_user(tmp_path: Path) -> None:
    out = run_spec(
        """
name: sustain
backend: {type: noop, options: {runtime_s: 0.1}}
load: {model: sustain, users: 3, jobs_per_user: 2, sleep_coef: 0.05s}
trial: {duration: 1s}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    ev = events(out)
    c = stage_counts(ev)
    assert c["submit"] > 6  # replacements were submitted as jobs finished
    assert c["op_start"] == c["op_end"] > 0  # query_state calls were timed
    # never more than users × jobs_per_user in the system at once
    sub = ev.filter(pl.col("stage") == "submit_ack").select("job", pl.col("t_ns").alias("a"))
    end = ev.filter(pl.col("stage") == "client_done").select("job", pl.col("t_ns").alias("b"))
    iv = sub.join(end, on="job", how="left")
    marks = pl.concat(
        [
            iv.select(pl.col("a").alias("t"), pl.lit(1).alias("d")),
            iv.drop_nulls("b").select(pl.col("b").alias("t"), pl.lit(-1).alias("d")),
        ]
    ).sort(["t", "d"])
    assert marks["d"].cum_sum().max() <= 6


def test_batch_and_probe(tmp_path: Path) -> None:
    out = run_spec(
        """
name: batch
backend: {type: noop}
load: {model: batch, jobs: 25, submitters: 4}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    assert stage_counts(events(out))["client_done"] == 25
    out = run_spec(
        """
name: probe
backend: {type: noop}
load: {model: probe, count: 4, gap: 0.05s, burst: {requests: 6, threads: [1, 3]}}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    ev = events(out)
    assert stage_counts(ev)["submit"] == 4 + 6 * 2
    bursts = ev.filter(pl.col("stage") == "op_start")["attrs"].str.json_path_match("$.threads")
    assert sorted(bursts.to_list()) == ["1", "3"]


@pytest.mark.parametrize(("event_log", "name"), [(None, "events.arrows"), ("csv", "events.csv")])
def test_a_new_trial_writes_the_log_format_its_spec_asks_for(
    tmp_path: Path, event_log: str | None, name: str
) -> None:
    """Columnar by default; ``trial.event_log: csv`` still gives the CSV of older runs, and
    either reads back to the same events."""
    trial = f"trial: {{jobs: 10, event_log: {event_log}}}" if event_log else "trial: {jobs: 10}"
    out = run_spec(
        f"""
name: format
backend: {{type: noop}}
load: {{model: batch, jobs: 10, submitters: 2}}
{trial}
timeouts: {{status_interval: 0.05s}}
""",
        tmp_path,
    )
    tdir = out.run.trial_dir("p00-t00")
    assert sorted(p.name for p in tdir.glob("events*")) == [name]
    assert stage_counts(events(out))["client_done"] == 10


def test_local_backend_runs_real_processes(tmp_path: Path) -> None:
    out = run_spec(
        """
name: local
backend: {type: local, options: {slots: 2}}
job: {command: [/bin/sleep, "0.3"]}
load: {model: open, rate: 20/s}
trial: {jobs: 6}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    ev = events(out)
    c = stage_counts(ev)
    assert c["local_start"] == c["local_end"] == c["client_done"] == 6
    st = ev.filter(pl.col("stage") == "local_start")["t_ns"].sort().to_numpy()
    # two slots: the third job starts only after the first finished (~0.3 s later)
    assert (st[2] - st[0]) / 1e9 >= 0.28


def test_local_backend_failures(tmp_path: Path) -> None:
    out = run_spec(
        """
name: localfail
backend: {type: local}
job: {command: [/bin/false]}
load: {model: open, rate: 20/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    kinds = events(out).filter(pl.col("stage") == "failed")["attrs"].str.json_path_match("$.kind")
    assert kinds.to_list() == ["job_failed"] * 3
    out = run_spec(
        """
name: localmissing
backend: {type: local}
job: {command: [/nonexistent/program, "; rm -rf /"]}
load: {model: open, rate: 20/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    msgs = events(out).filter(pl.col("stage") == "failed")["attrs"].str.json_path_match("$.message")
    assert all("cannot start" in m for m in msgs.to_list())


def test_abort_cancels_outstanding_and_finalises(tmp_path: Path) -> None:
    out = run_spec(
        """
name: abort
backend: {type: local, options: {slots: 4}}
job: {command: [/bin/sleep, "30"]}
load: {model: open, rate: 10/s}
trial: {duration: 20s}
trials: 3
timeouts: {status_interval: 0.1s}
""",
        tmp_path,
        abort_after=0.8,
    )
    assert out.status == "aborted" and len(out.trials) == 1
    ev = events(out)
    c = stage_counts(ev)
    assert 5 <= c["submit_ack"] <= 12
    assert c["cancelled"] == c["submit_ack"]  # nothing left running
    info = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    assert info["status"] == "aborted"
    assert out.run.read_experiment()["status"] == "aborted"


@pytest.mark.parametrize("duty", [0.25, 1.0])
def test_slow_status_sweeps_are_spaced_out(tmp_path: Path, duty: float) -> None:
    """A 0.2 s sweep with status_max_duty 0.25 is followed by >= 0.6 s of rest, not by
    the 50 ms interval; with 1.0 the interval stands whatever the sweeps cost."""
    out = run_spec(
        f"""
name: duty
backend: {{type: noop, options: {{runtime_s: 1.5, status_delay_s: 0.2}}}}
load: {{model: open, rate: 20/s}}
trial: {{jobs: 4}}
timeouts: {{status_interval: 50ms, status_max_duty: {duty}, drain: 10s}}
""",
        tmp_path,
    )
    assert out.status == "complete"
    info = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    assert stage_counts(events(out))["client_done"] == 4
    if duty < 1.0:
        assert info["status_pauses_stretched"] == info["status_sweeps"] > 0
        assert info["status_pause_max_ns"] >= 600_000_000
    else:
        assert info["status_pauses_stretched"] == 0
        assert info["status_pause_max_ns"] == 50_000_000
        assert info["status_sweeps"] >= 4  # 1.5 s of jobs, a 0.25 s cycle


def test_status_max_duty_must_be_a_share(tmp_path: Path) -> None:
    from gridbench.errors import SpecError

    with pytest.raises(SpecError, match="status_max_duty"):
        load_spec_text("name: x\nbackend: {type: noop}\ntimeouts: {status_max_duty: 0}\n")


def test_drain_sweeps_once_more_at_its_deadline(tmp_path: Path) -> None:
    """Jobs that end during a long (stretched) pause before the drain's deadline are seen
    by a last sweep at the deadline, not cancelled as if they had never ended."""
    out = run_spec(
        """
name: last-sweep
backend: {type: noop, options: {runtime_s: 1.2, status_delay_s: 0.5}}
load: {model: open, rate: 40/s}
trial: {jobs: 4}
timeouts: {status_interval: 50ms, drain: 2s}
""",
        tmp_path,
    )
    c = stage_counts(events(out))
    assert c["client_done"] == 4
    assert "cancelled" not in c and "failed" not in c


def test_a_sweep_of_the_backend_block_runs_each_point_on_its_own_backend(tmp_path: Path) -> None:
    # noop's submit_delay_s makes each submit call take that long: visible per point
    out = run_spec(
        """
name: backend-sweep
backend: {type: noop}
load: {model: open, rate: 50/s}
trial: {jobs: 5}
sweep: {backend.options.submit_delay_s: [0.0, 0.2]}
timeouts: {status_interval: 0.05s, drain: 10s}
""",
        tmp_path,
    )
    assert out.status == "complete"
    calls = []
    for tid in ("p00-t00", "p01-t00"):
        ev = events(out, tid).pivot(on="stage", index="job", values="t_ns")
        calls.append(((ev["submit_ack"] - ev["submit"]) / 1e9).to_list())
    assert max(calls[0]) < 0.15  # point 1: no delay
    assert min(calls[1]) >= 0.2  # point 2: its own backend, with the delay


def test_a_bad_backend_option_in_a_sweep_fails_before_a_run_exists(tmp_path: Path) -> None:
    from gridbench.errors import SpecError

    with pytest.raises(SpecError):
        run_spec(
            """
name: bad-backend-sweep
backend: {type: noop}
load: {model: open, rate: 50/s}
trial: {jobs: 2}
sweep: {backend.options.no_such_option: [1, 2]}
""",
            tmp_path,
        )
    assert not any(tmp_path.iterdir())
