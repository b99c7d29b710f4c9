"""Events -> per-job timeline: first occurrence, clock offsets, precision, failures (and
the job keys of the in-memory oracle the chunked reduction is checked against)."""

from __future__ import annotations

import numpy as np
import polars as pl

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.clocks import to_controller_time
from gridbench.jobflow.analysis.reduce import timeline_of
from gridbench.jobflow.analysis.timelines import job_times, timeline_stages
from timeline_oracle import _job_ids, _job_ids_exact

STAGES = timeline_stages(["submit", "done"])


def test_stage_list_adds_client_stages() -> None:
    assert STAGES == ("intended", "submit", "done", "submit_ack", "client_done")


def test_first_occurrence_offsets_and_precision() -> None:
    ev = fx.frame(
        [
            {"job": "a", "stage": "submit", "t": 5.0},
            {"job": "a", "stage": "submit", "t": 3.0},  # re-stamped: the earliest wins
            {
                "job": "a",
                "stage": "done",
                "t": 10.0,
                "clock_offset_ns": -2 * fx.NS,
                "precision_ns": fx.NS,
            },
            {"job": "b", "stage": "submit", "t": 4.0},
            {"job": "b", "stage": "done", "t": 9.0, "precision_ns": 1_000_000},
            {"job": "b", "stage": "weird", "t": 1.0},  # not in the chain: ignored
        ]
    )
    tl = timeline_of(to_controller_time(ev, {}), STAGES)
    rows = {r["job"]: r for r in tl.table.iter_rows(named=True)}
    assert set(rows) == {"a", "b"}
    assert rows["a"]["submit"] == fx.T0 + 3 * fx.NS
    # the controller's time: t_ns − clock_offset_ns (offset = agent clock − controller's)
    assert rows["a"]["done"] == fx.T0 + 12 * fx.NS
    assert rows["b"]["done"] == fx.T0 + 9 * fx.NS
    assert rows["a"]["intended"] is None
    assert tl.precision_ns["done"] == fx.NS  # the coarsest stamp of the stage
    assert tl.precision_ns["submit"] == 1_000
    assert tl.table.schema["submit"] == pl.Int64

    jt = job_times(tl, fx.T0)
    i = tl.table["job"].to_list().index("a")
    assert jt.get("done")[i] == 12.0
    assert np.isnan(jt.get("intended")[i])
    assert jt.precision_s["done"] == 1.0


def test_failures_first_kind_per_job() -> None:
    ev = fx.frame(
        [
            {"job": "a", "stage": "submit", "t": 1.0},
            {"job": "a", "stage": "failed", "t": 5.0, "attrs": {"kind": "lost"}},
            {"job": "a", "stage": "failed", "t": 2.0, "attrs": {"kind": "submit_timeout"}},
            {"job": "b", "stage": "failed", "t": 1.0, "attrs": {"kind": "dropped"}},
            {"job": "c", "stage": "failed", "t": 1.0},  # no kind recorded
            {"job": "d", "stage": "submit", "t": 1.0},
        ]
    )
    tl = timeline_of(ev, STAGES)
    kinds = dict(zip(tl.table["job"].to_list(), tl.table["failed"].to_list(), strict=True))
    assert kinds == {"a": "submit_timeout", "b": "dropped", "c": "unknown", "d": None}
    jt = job_times(tl, fx.T0)
    assert jt.kinds == ("dropped", "submit_timeout", "unknown")
    assert int(jt.failed.sum()) == 3
    assert int(jt.kind_mask("dropped").sum()) == 1


def test_empty_log() -> None:
    tl = timeline_of(fx.frame([]), STAGES)
    assert tl.n_jobs == 0
    jt = job_times(tl, fx.T0)
    assert jt.n_jobs == 0 and not jt.has("submit")


def test_hashed_and_exact_job_ids_agree() -> None:
    rng = np.random.default_rng(0)
    jobs = [f"job-{i}" for i in rng.integers(0, 300, 2000)]
    ev = pl.DataFrame({"job": jobs})
    jid_h, first_h = _job_ids(ev)
    jid_e, first_e = _job_ids_exact(ev)
    assert np.array_equal(jid_h, jid_e) and np.array_equal(first_h, first_e)
    # dense ids in order of first appearance, and every row maps back to its own job
    names = ev["job"].gather(first_h).to_list()
    assert [names[j] for j in jid_h] == jobs
    assert jid_h[0] == 0
