"""Trial validity: late and dropped submissions, client-bound runs, stamp precision."""

from __future__ import annotations

import numpy as np

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.trial import analyze_trial
from gridbench.jobflow.events.chain import Segment, Stage, StageChain

CHAIN = fx.simple_chain("submit", "client_done")
N = 100


def _times(late: int = 0, lateness: float = 0.5) -> dict[str, np.ndarray]:
    i = np.arange(N, dtype=float)
    submit = i + 0.001
    submit[:late] += lateness
    return {"intended": i, "submit": submit, "client_done": submit + 5.0}


def _validity(t: dict[str, np.ndarray], **kw: object) -> dict:
    failures = kw.pop("failures", None)
    resources = kw.pop("resources", None)
    chain = kw.pop("chain", CHAIN)
    planned = kw.pop("planned", N)
    ev = fx.times_frame(t, failures=failures, precision=kw.pop("precision", None))  # type: ignore[arg-type]
    res = analyze_trial(fx.info(chain, planned=planned, **kw), ev, resources)  # type: ignore[arg-type]
    return res.metrics


def test_clean_trial_is_valid() -> None:
    m = _validity(_times(), resources=fx.cpu_samples(110, 20.0))
    v = m["validity"]
    assert m["valid"] and v["valid"] and v["reasons"] == []
    assert v["late_share"] == 0.0 and v["dropped_share"] == 0.0
    assert v["client_cpu_mean"] == 20.0 and v["client_bound"] is False
    assert m["jobs"] == {
        "planned": 100,
        "submitted": 100,
        "completed": 100,
        "failed": 0,
        "dropped": 0,
        "late": 0,
    }


def test_late_submissions_invalidate() -> None:
    m = _validity(_times(late=10))
    v = m["validity"]
    assert not m["valid"] and v["late_share"] == 0.1 and m["jobs"]["late"] == 10
    assert any(
        "10% of the planned submissions started more than 100 ms late" in r for r in v["reasons"]
    )
    # 5 late of 100 is exactly the limit: still valid
    assert _validity(_times(late=5))["valid"]
    # later than 50 ms but within the 100 ms threshold does not count
    assert _validity(_times(late=50, lateness=0.05))["validity"]["late_share"] == 0.0


def test_dropped_jobs_invalidate() -> None:
    t = _times()
    for k in t:
        t[k] = t[k].copy()
    t["submit"][:2] = np.nan
    t["client_done"][:2] = np.nan
    m = _validity(t, failures={0: "dropped", 1: "dropped"})
    v = m["validity"]
    assert v["dropped_share"] == 0.02 and not m["valid"]
    assert any("2% of the planned jobs were dropped" in r for r in v["reasons"])
    assert m["jobs"]["dropped"] == 2 and m["jobs"]["submitted"] == 98
    assert m["failures"] == {"dropped": 2}


def test_client_bound_one_core_without_children() -> None:
    m = _validity(_times(), resources=fx.cpu_samples(110, 95.0), cpu_count=4)
    v = m["validity"]
    assert v["client_bound"] and not m["valid"]
    assert "one core" in v["client_cpu_rule"]
    assert any("the client was the bottleneck" in r and "95%" in r for r in v["reasons"])


def test_client_bound_all_cores_with_children() -> None:
    ok = _validity(_times(), resources=fx.cpu_samples(110, 95.0, children=3), cpu_count=4)
    assert not ok["validity"]["client_bound"] and ok["valid"]
    bound = _validity(_times(), resources=fx.cpu_samples(110, 380.0, children=3), cpu_count=4)
    assert bound["validity"]["client_bound"] and not bound["valid"]
    assert "all 4 cores" in bound["validity"]["client_cpu_rule"]


def test_coarse_segment_warns_but_coarse_overall_invalidates() -> None:
    chain = StageChain(
        stages=(Stage("submit", "client"), Stage("mid", "ce"), Stage("client_done", "client")),
        segments=(Segment("s1", "submit", "mid"), Segment("s2", "mid", "client_done")),
    )
    i = np.arange(N, dtype=float)
    t = {"intended": i, "submit": i, "mid": i + 2.0, "client_done": i + 30.0}
    m = _validity(t, chain=chain, precision={"mid": 1_000_000_000})
    assert m["valid"] and set(m["validity"]["coarse_precision"]) == {"s1"}  # 1 s vs 2 s median
    assert any(
        "s1 is measured with stamps of 1 s precision" in w for w in m["validity"]["warnings"]
    )
    t2 = {"intended": i, "submit": i, "mid": i + 0.5, "client_done": i + 2.0}
    m2 = _validity(t2, chain=chain, precision={"client_done": 1_000_000_000})
    assert not m2["valid"] and "overall" in m2["validity"]["coarse_precision"]


def test_negative_durations_and_status() -> None:
    t = _times()
    t["client_done"] = t["client_done"].copy()
    t["client_done"][:3] = t["submit"][:3] - 1.0
    m = _validity(t)
    # backwards stamps are impossible data: the trial is invalid, the jobs counted
    assert not m["valid"] and m["validity"]["backwards_jobs"] == 3
    assert any("3 job(s) reached client_done before submit" in r for r in m["validity"]["reasons"])
    aborted = _validity(_times(), status="aborted")
    assert not aborted["valid"]
    assert "the trial did not complete (status aborted)" in aborted["validity"]["reasons"]


def test_no_completed_job_is_invalid() -> None:
    t = _times()
    t["client_done"] = np.full(N, np.nan)
    m = _validity(t)
    assert not m["valid"] and "no job completed" in m["validity"]["reasons"]
