"""Closed-loop model results (sustain, batch, probe) and growth curves.

Hand-computed values on small event logs written as the runner writes them, then one run
of each model through the real runner and analyze_run, checked against its own events.
"""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from gridbench.growth import fit_growth
from gridbench.jobflow.analysis import analyze_run
from gridbench.jobflow.analysis.growth import sweep_growth
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.runner import ExperimentOutcome, ExperimentRunner
from gridbench.jobflow.loads.closed import ci_statement, pm_text, pooled
from gridbench.jobflow.spec import load_spec_text, make_plan
from gridbench.stats import describe
from test_analysis_fixtures import edgi_chain, frame, info, simple_chain, write_trial

T975 = {2: 4.302652729911275, 3: 3.182446305284263}  # Student t(0.975, df)


def local_chain() -> StageChain:
    return StageChain(
        (
            Stage("submit", "client"),
            Stage("local_start", "local"),
            Stage("local_end", "local"),
            Stage("client_done", "client"),
        ),
        (
            Segment("queue_wait", "submit", "local_start"),
            Segment("run", "local_start", "local_end"),
        ),
    )


def closed_run(
    tmp_path: Path,
    model: str,
    rows: list[dict[str, Any]],
    chain: StageChain,
    *,
    point: dict[str, Any] | None = None,
    trial_id: str = "p00-t00",
    point_index: int = 0,
    trial_index: int = 0,
) -> Path:
    run = tmp_path / "run"
    tinfo = info(
        chain,
        rate=None,
        load_model=model,
        trial_id=trial_id,
        point_index=point_index,
        trial_index=trial_index,
    )
    write_trial(run, tinfo, frame(rows), extra={"point": point or {}})
    return run


def ev(job: str, stage: str, t: float, agent: str = "agent-0", **attrs: Any) -> dict[str, Any]:
    return {"job": job, "stage": stage, "t": t, "agent": agent, "attrs": attrs or None}


# --- sustain --------------------------------------------------------------------------


def sustain_rows() -> list[dict[str, Any]]:
    q = {"op": "query"}
    return [
        # user0: a done (submit 0.1 s), b failed by the backend (0.3 s)
        ev("a", "submit", 0.0, "user0"),
        ev("a", "submit_ack", 0.1, "user0"),
        ev("a", "client_done", 1.0, "user0"),
        ev("b", "submit", 0.2, "user0"),
        ev("b", "submit_ack", 0.5, "user0"),
        ev("b", "client_done", 2.0, "user0", state="failed"),
        ev("b", "failed", 2.0, "user0", kind="job_failed"),
        # user1: c cancelled (0.2 s), d submit error (an exception), e done (0.1 s)
        ev("c", "submit", 0.1, "user1"),
        ev("c", "submit_ack", 0.3, "user1"),
        ev("c", "cancelled", 1.5, "user1", by="gridbench"),
        ev("d", "submit", 0.4, "user1"),
        ev("d", "failed", 0.6, "user1", kind="submit_error", message="boom"),
        ev("e", "submit", 0.7, "user1"),
        ev("e", "submit_ack", 0.8, "user1"),
        ev("e", "client_done", 1.9, "user1"),
        # query_state calls: 0.05 s, 0.2 s, an error, 0.01 s
        ev("op-user0-1", "op_start", 1.0, "user0", user="user0", jobs=2, **q),
        ev("op-user0-1", "op_end", 1.05, "user0", **q),
        ev("op-user1-2", "op_start", 1.2, "user1", user="user1", jobs=2, **q),
        ev("op-user1-2", "op_end", 1.4, "user1", **q),
        ev("op-user1-3", "op_start", 1.6, "user1", user="user1", jobs=1, **q),
        ev("op-user1-3", "op_end", 1.7, "user1", error="timeout", **q),
        ev("op-user0-4", "op_start", 2.0, "user0", user="user0", jobs=1, **q),
        ev("op-user0-4", "op_end", 2.01, "user0", **q),
    ]


def test_sustain_hand_computed(tmp_path: Path) -> None:
    run = closed_run(
        tmp_path,
        "sustain",
        sustain_rows(),
        simple_chain("submit", "client_done"),
        point={"users": 2},
    )
    m = analyze_run(run)
    t = m["points"][0]["trials"][0]
    assert t["valid"], t["validity"]["reasons"]
    model = t["model"]
    assert model["kind"] == "sustain" and model["users"] == 2
    sub = model["submit"]
    assert sub["n"] == 4
    assert sub["mean"] == pytest.approx((0.1 + 0.3 + 0.2 + 0.1) / 4)
    assert (sub["min"], sub["max"]) == (pytest.approx(0.1), pytest.approx(0.3))
    qry = model["query"]
    assert qry["n"] == 3  # the failed call is an exception, not a time
    assert qry["mean"] == pytest.approx((0.05 + 0.2 + 0.01) / 3)
    assert (qry["min"], qry["max"]) == (pytest.approx(0.01), pytest.approx(0.2))
    assert model["counts"] == {
        "submitted": 5,
        "done": 2,
        "canceled": 1,
        "failed": 1,
        "lost": 0,
        "exceptions": 2,
        "submit_exceptions": 1,
        "query_exceptions": 1,
        "queries": 4,
    }
    u0, u1 = model["per_user"]["user0"], model["per_user"]["user1"]
    assert u0["submitted"] == 2 and u0["submit_mean"] == pytest.approx(0.2)
    assert (u0["done"], u0["failed"], u0["canceled"], u0["exceptions"]) == (1, 1, 0, 0)
    assert u0["queries"] == 2 and u0["query_mean"] == pytest.approx(0.03)
    assert u1["submitted"] == 3 and u1["submit_mean"] == pytest.approx(0.15)
    assert u1["submit_max"] == pytest.approx(0.2)
    assert (u1["done"], u1["failed"], u1["canceled"], u1["exceptions"]) == (1, 0, 1, 2)
    assert u1["queries"] == 2 and u1["query_mean"] == pytest.approx(0.2)
    assert "2 done, 1 canceled, 1 failed, 2 exceptions" in model["statement"]
    summ = m["points"][0]["summary"]["model"]
    assert summ["kind"] == "sustain" and summ["trials"] == 1
    assert summ["submit"]["mean"]["mean"] == pytest.approx(0.175)
    assert summ["counts"]["exceptions"]["mean"] == 2
    assert summ["pooled"]["query"]["n"] == 3


def test_sustain_thresholds_reach_model(tmp_path: Path) -> None:
    run = closed_run(
        tmp_path,
        "sustain",
        sustain_rows(),
        simple_chain("submit", "client_done"),
        point={"users": 2},
    )
    th = [
        {"metric": "model.submit.mean", "op": "<", "value": 0.15},
        {"metric": "model.counts.exceptions", "op": "==", "value": 2},
        {"metric": "summary.model.query.max.mean", "op": "<=", "value": 0.2},
        {"metric": "model.nothing.mean", "op": "<", "value": 1},
    ]
    res = analyze_run(run, thresholds=th)["thresholds"]
    assert [r["passed"] for r in res] == [False, True, True, False]
    assert res[0]["actual"] == pytest.approx(0.175)
    assert res[2]["actual"] == pytest.approx(0.2)
    assert res[3]["actual"] is None and "unknown metric path" in res[3]["reason"]


# --- batch ----------------------------------------------------------------------------


def batch_rows() -> list[dict[str, Any]]:
    loc = {"source": "local"}
    return [
        ev("j0", "submit", 0.0),
        ev("j0", "submit_ack", 0.1),
        {**ev("j0", "local_start", 0.2), **loc},
        {**ev("j0", "local_end", 1.0), **loc},
        ev("j0", "client_done", 1.3),
        ev("j1", "submit", 0.1),
        ev("j1", "submit_ack", 0.25),
        {**ev("j1", "local_start", 0.3), **loc},
        {**ev("j1", "local_end", 1.5), **loc},
        ev("j1", "client_done", 1.6),
        ev("j2", "submit", 0.2),
        ev("j2", "submit_ack", 0.4),
        {**ev("j2", "local_start", 0.5), **loc},
        {**ev("j2", "local_end", 2.0), **loc},
        ev("j2", "client_done", 2.1, state="failed"),
        ev("j2", "failed", 2.1, kind="job_failed"),
        # no server stamps for j3: it ends when the client saw it end
        ev("j3", "submit", 0.3),
        ev("j3", "submit_ack", 0.5),
        ev("j3", "client_done", 2.4),
        ev("j4", "submit", 0.4),
        ev("j4", "failed", 0.45, kind="submit_rejected"),
    ]


def test_batch_hand_computed(tmp_path: Path) -> None:
    m = analyze_run(closed_run(tmp_path, "batch", batch_rows(), local_chain()))
    model = m["points"][0]["trials"][0]["model"]
    assert model["end_stage"] == "local_end"
    assert (model["submitted"], model["acknowledged"], model["ended"]) == (5, 4, 4)
    assert (model["completed"], model["failed"]) == (3, 2)
    assert model["makespan_s"] == pytest.approx(2.4)  # last end (j3's client_done) − 0.0
    assert model["throughput_per_s"] == pytest.approx(4 / 2.4)
    assert model["submit_span_s"] == pytest.approx(0.5)
    assert model["submit_rate_per_s"] == pytest.approx(4 / 0.5)
    assert model["submit"]["mean"] == pytest.approx((0.1 + 0.15 + 0.2 + 0.2) / 4)
    res = analyze_run(
        closed_run(tmp_path, "batch", batch_rows(), local_chain()),
        thresholds=[{"metric": "model.throughput_per_s", "op": ">=", "value": 1.6}],
    )["thresholds"][0]
    assert res["passed"] and res["actual"] == pytest.approx(1 / 0.6)


def test_batch_without_server_stages_ends_at_client_done(tmp_path: Path) -> None:
    rows = [r for r in batch_rows() if r["stage"] not in ("local_start", "local_end")]
    m = analyze_run(closed_run(tmp_path, "batch", rows, simple_chain("submit", "client_done")))
    model = m["points"][0]["trials"][0]["model"]
    assert model["end_stage"] == "client_done"
    assert model["ended"] == 4
    assert model["throughput_per_s"] == pytest.approx(4 / 2.4)


def test_batch_summary_across_trials(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for k, scale in enumerate((1.0, 2.0, 4.0)):
        rows = [{**r, "t": r["t"] * scale} for r in batch_rows()]
        tinfo = info(
            local_chain(), rate=None, load_model="batch", trial_id=f"p00-t0{k}", trial_index=k
        )
        write_trial(run, tinfo, frame(rows), extra={"point": {"jobs": 5}})
    summ = analyze_run(run)["points"][0]["summary"]["model"]
    tps = [4 / 2.4, 4 / 4.8, 4 / 9.6]
    tp = summ["throughput_per_s"]
    assert tp["n"] == 3 and tp["mean"] == pytest.approx(np.mean(tps))
    assert tp["std"] == pytest.approx(np.std(tps, ddof=1))
    assert tp["ci95"] == pytest.approx(T975[2] * np.std(tps, ddof=1) / math.sqrt(3))
    assert summ["pooled"]["submit"]["n"] == 12
    assert "mean over 3 trials" in summ["statement"]


# --- probe ----------------------------------------------------------------------------


def probe_rows() -> list[dict[str, Any]]:
    ce = {"source": "ce"}
    rows: list[dict[str, Any]] = []
    # (submit, ce_submit, ack): call times 0.5, 0.6, 0.4, 0.7 s; below = ack − ce_submit
    singles = [(0.0, 0.3, 0.5), (2.0, 2.2, 2.6), (4.0, 4.7, 4.4), (6.0, 6.2, 6.7)]
    for i, (s, cs, a) in enumerate(singles):
        j = f"s{i}"
        rows += [
            ev(j, "submit", s, probe="single"),
            {**ev(j, "ce_entry", s + 0.05), **ce},
            {**ev(j, "ce_submit", cs), **ce},
            ev(j, "submit_ack", a),
            ev(j, "client_done", a + 1.0),
        ]
    rows += [
        ev("s4", "submit", 8.0, probe="single"),
        ev("s4", "failed", 9.0, kind="submit_timeout"),
    ]
    # a burst of 3 requests with 2 threads, 10.0 → 11.5 s
    rows += [
        ev("op-burst2-1", "op_start", 10.0, op="burst", threads=2, requests=3),
        ev("op-burst2-1", "op_end", 11.5, op="burst", threads=2),
    ]
    for j, s, a in (("b0", 10.0, 10.4), ("b1", 10.0, 10.6), ("b2", 10.5, 11.4)):
        rows += [
            ev(j, "submit", s, probe="burst2"),
            ev(j, "submit_ack", a),
            ev(j, "client_done", a + 1),
        ]
    # a burst of 2 requests with 1 thread, 12.0 → 12.8 s, one of them fails
    rows += [
        ev("op-burst1-2", "op_start", 12.0, op="burst", threads=1, requests=2),
        ev("op-burst1-2", "op_end", 12.8, op="burst", threads=1),
        ev("b3", "submit", 12.0, probe="burst1"),
        ev("b3", "submit_ack", 12.3),
        ev("b3", "client_done", 13.3),
        ev("b4", "submit", 12.3, probe="burst1"),
        ev("b4", "failed", 12.8, kind="submit_error"),
    ]
    return rows


def test_probe_hand_computed(tmp_path: Path) -> None:
    m = analyze_run(closed_run(tmp_path, "probe", probe_rows(), edgi_chain()))
    t = m["points"][0]["trials"][0]
    assert t["valid"], t["validity"]["reasons"]
    model = t["model"]
    assert model["operation"] == "submit"
    single = model["single"]
    std = math.sqrt(0.05 / 3)
    assert (single["n"], single["errors"]) == (4, 1)
    assert single["mean"] == pytest.approx(0.55)
    assert single["std"] == pytest.approx(std)
    assert single["ci95"] == pytest.approx(T975[3] * std / 2)
    assert single["statement"] == "550±205 ms (α=0.05)"
    below = model["below"]
    assert below["stage"] == "ce_submit"  # the server's submit stage, not its entry
    assert below["n"] == 3  # s2's ce_submit came after the call returned
    bstd = float(np.std([0.2, 0.4, 0.5], ddof=1))
    assert below["mean"] == pytest.approx(1.1 / 3)
    assert below["ci95"] == pytest.approx(T975[2] * bstd / math.sqrt(3))
    assert below["statement"] == "367±379 ms of the 550"
    b2, b1 = model["bursts"]["2"], model["bursts"]["1"]
    assert (b2["threads"], b2["requests"], b2["errors"]) == (2, 3, 0)
    assert b2["total_s"] == pytest.approx(1.5) and b2["per_request_s"] == pytest.approx(0.5)
    assert b2["request"]["mean"] == pytest.approx((0.4 + 0.6 + 0.9) / 3)
    assert (b1["threads"], b1["requests"], b1["errors"]) == (1, 2, 1)
    assert b1["total_s"] == pytest.approx(0.8) and b1["per_request_s"] == pytest.approx(0.4)
    assert b1["request"]["n"] == 1 and b1["request"]["mean"] == pytest.approx(0.3)
    assert model["statement"].startswith(
        "submission time: 550±205 ms (α=0.05), n=4; 367±379 ms of the 550 below ce_submit; bursts: "
    )
    res = analyze_run(
        closed_run(tmp_path, "probe", probe_rows(), edgi_chain()),
        thresholds=[
            {"metric": "model.single.mean", "op": "<", "value": 0.6},
            {"metric": "model.bursts.2.total_s", "op": "<", "value": 1.0},
            {"metric": "summary.model.pooled.single.ci95", "op": "<", "value": 0.3},
        ],
    )["thresholds"]
    assert [r["passed"] for r in res] == [True, False, True]
    assert res[0]["actual"] == pytest.approx(0.55) and res[1]["actual"] == pytest.approx(1.5)


def test_probe_status_operations_make_a_valid_trial(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    for i, (s, d) in enumerate(((0.0, 0.01), (1.0, 0.02), (2.0, 0.03))):
        rows += [
            ev(f"op-{i}", "op_start", s, op="status", probe="single"),
            ev(f"op-{i}", "op_end", s + d, op="status", probe="single"),
        ]
    rows += [
        ev("op-9", "op_start", 3.0, op="status", probe="single"),
        ev("op-9", "op_end", 3.5, op="status", probe="single", error="refused"),
    ]
    m = analyze_run(closed_run(tmp_path, "probe", rows, simple_chain("submit", "client_done")))
    t = m["points"][0]["trials"][0]
    # no job was submitted, and for a status probe that is not a reason to discard it
    assert t["valid"] and t["validity"]["reasons"] == []
    single = t["model"]["single"]
    assert t["model"]["operation"] == "status" and t["model"]["below"] is None
    assert (single["n"], single["errors"]) == (3, 1)
    assert single["mean"] == pytest.approx(0.02)
    assert single["statement"] == "20.0±24.8 ms (α=0.05)"
    # without any successful call the trial is invalid, with a reason that says so
    only_err = [r for r in rows if r["job"] == "op-9"]
    m = analyze_run(
        closed_run(tmp_path / "b", "probe", only_err, simple_chain("submit", "client_done"))
    )
    t = m["points"][0]["trials"][0]
    assert not t["valid"] and t["validity"]["reasons"] == ["no single status call succeeded"]


def test_probe_point_pools_trials(tmp_path: Path) -> None:
    run = tmp_path / "run"
    trials = [[0.5, 0.6, 0.4], [0.7, 0.5]]
    for k, durs in enumerate(trials):
        rows: list[dict[str, Any]] = []
        for i, d in enumerate(durs):
            rows += [
                ev(f"j{i}", "submit", 2.0 * i, probe="single"),
                ev(f"j{i}", "submit_ack", 2.0 * i + d),
                ev(f"j{i}", "client_done", 2.0 * i + d + 1),
            ]
        tinfo = info(
            simple_chain("submit", "client_done"),
            rate=None,
            load_model="probe",
            trial_id=f"p00-t0{k}",
            trial_index=k,
        )
        write_trial(run, tinfo, frame(rows), extra={"point": {"processes": 4}})
    summ = analyze_run(run)["points"][0]["summary"]["model"]
    everything = describe(np.array([0.5, 0.6, 0.4, 0.7, 0.5]))
    p = summ["pooled"]["single"]
    assert p["n"] == 5 and p["mean"] == pytest.approx(everything["mean"])
    assert p["std"] == pytest.approx(everything["std"])
    assert p["ci95"] == pytest.approx(everything["ci95"])
    assert (p["min"], p["max"]) == (pytest.approx(0.4), pytest.approx(0.7))
    assert p["statement"] == ci_statement(everything)
    assert summ["single"]["mean"]["mean"] == pytest.approx((0.5 + 0.6) / 2)


def test_statement_forms() -> None:
    assert pm_text(0.557, 0.124) == "557±124 ms"
    assert pm_text(47.2, 10.3) == "47.2±10.3 s"
    assert pm_text(0.0000523, 0.0000041) == "0.0523±0.0041 ms"
    assert ci_statement({"n": 30, "mean": 0.557, "ci95": 0.124}) == "557±124 ms (α=0.05)"
    assert ci_statement({"n": 1, "mean": 0.557, "ci95": None}).startswith("557 ms (n=1")
    assert pooled([None, {"n": 0, "mean": None}])["n"] == 0


# --- growth ---------------------------------------------------------------------------

AEM_X = np.array([1, 2, 4, 8, 16, 32, 64], dtype=np.float64)  # processes per job
WIGGLE = np.array([1, -1, 1, -1, 1, -1, 1], dtype=np.float64)


def test_growth_finds_the_seeds_quadratic() -> None:
    y = 0.0062 * AEM_X**2 * (1 + 0.005 * WIGGLE)
    fit = fit_growth(AEM_X, y, quantity="submission time", unit="s")
    assert fit is not None
    assert fit["model"] == "quadratic" and fit["form"] == "b·x²" and not fit["intercept"]
    assert fit["coefficients"]["b"] == pytest.approx(0.0062, rel=0.01)
    assert fit["r2"] > 0.999
    assert re.fullmatch(r"submission time grows quadratically: 0\.006\d*·x² s", fit["statement"])
    exact = fit_growth(AEM_X, 0.0062 * AEM_X**2, quantity="submission time", unit="s")
    assert exact is not None and exact["r2"] == pytest.approx(1.0)
    assert exact["statement"] == "submission time grows quadratically: 0.0062·x² s"


def test_growth_linear_constant_nlogn_and_offset_quadratic() -> None:
    lin = fit_growth(AEM_X, 0.5 + 0.1 * AEM_X + 0.01 * WIGGLE, quantity="t", unit="s")
    assert lin is not None and lin["model"] == "linear" and lin["intercept"]
    assert lin["coefficients"]["a"] == pytest.approx(0.5, abs=0.02)
    assert lin["coefficients"]["b"] == pytest.approx(0.1, rel=0.01)
    assert lin["statement"] == "t grows linearly: 0.5 + 0.1·x s"
    const = fit_growth(AEM_X, 0.3 + 0.001 * WIGGLE, quantity="t", unit="s")
    assert const is not None and const["model"] == "constant"
    assert const["statement"] == "t is constant: 0.3 s"
    nlogn = fit_growth(AEM_X, 1 + 0.2 * AEM_X * np.log(AEM_X) + 0.01 * WIGGLE)
    assert nlogn is not None and nlogn["model"] == "nlogn"
    quad = fit_growth(AEM_X, 0.5 + 0.0062 * AEM_X**2 + 0.01 * WIGGLE)
    assert quad is not None and quad["model"] == "quadratic" and quad["intercept"]
    falling = fit_growth(AEM_X, 10 - 0.1 * AEM_X, quantity="t", unit="s")
    assert falling is not None and falling["statement"] == "t falls linearly: 10 − 0.1·x s"
    assert fit_growth([1, 2, 2], [1.0, 2.0, 2.0]) is None  # fewer than 3 distinct x


def test_sweep_growth_from_probe_points(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for k, x in enumerate(AEM_X):
        y = 0.0062 * x**2
        rows: list[dict[str, Any]] = []
        for i, d in enumerate((y * 0.99, y, y * 1.01)):  # mean exactly y
            rows += [
                ev(f"j{i}", "submit", 100.0 * i, probe="single"),
                ev(f"j{i}", "submit_ack", 100.0 * i + d),
                ev(f"j{i}", "client_done", 100.0 * i + d + 1),
            ]
        tinfo = info(
            simple_chain("submit", "client_done"),
            rate=None,
            load_model="probe",
            trial_id=f"p{k:02d}-t00",
            point_index=k,
        )
        write_trial(run, tinfo, frame(rows), extra={"point": {"processes": int(x)}})
    growth = analyze_run(run)["growth"]
    assert len(growth) == 1
    g = growth[0]
    assert g["parameter"] == "processes" and g["quantity"] == "model.single.mean"
    assert g["x"] == AEM_X.tolist()
    assert g["y"] == pytest.approx((0.0062 * AEM_X**2).tolist(), rel=1e-6)
    assert g["model"] == "quadratic" and g["coefficients"]["b"] == pytest.approx(0.0062, rel=1e-4)
    assert g["statement"] == "submission time grows quadratically: 0.0062·x² s (x = processes)"


def test_sweep_growth_groups_by_the_other_parameters() -> None:
    def pt(users: int, backend: str, y: float) -> dict[str, Any]:
        return {
            "point": {"users": users, "backend": backend},
            "summary": {"model": {"submit": {"mean": {"mean": y}}}},
        }

    pts = [pt(u, b, (0.1 if b == "a" else 0.2) * u) for b in ("a", "b") for u in (1, 2, 4, 8)]
    out = sweep_growth(pts, "sustain")
    assert [(g["fixed"], g["model"]) for g in out] == [
        ({"backend": "a"}, "linear"),
        ({"backend": "b"}, "linear"),
    ]
    assert [g["coefficients"]["b"] for g in out] == [pytest.approx(0.1), pytest.approx(0.2)]
    assert out[0]["statement"] == "submit time grows linearly: 0.1·x s (x = users)"
    assert sweep_growth(pts[:2], "sustain") == []  # fewer than 3 points
    assert sweep_growth(pts, None) == []


def test_open_model_growth_on_overall_latency(tmp_path: Path) -> None:
    run = tmp_path / "run"
    chain = simple_chain("submit", "client_done")
    for k, rate in enumerate((1.0, 2.0, 4.0, 8.0)):
        n = 10
        lat = 0.5 + 0.25 * rate  # linear in the offered rate
        t0 = np.arange(n) / rate
        rows = [ev(f"j{i}", "intended", t0[i]) for i in range(n)]
        rows += [ev(f"j{i}", "submit", t0[i]) for i in range(n)]
        rows += [ev(f"j{i}", "client_done", t0[i] + lat) for i in range(n)]
        tinfo = info(chain, rate=rate, trial_id=f"p{k:02d}-t00", point_index=k)
        write_trial(run, tinfo, frame(rows))
    m = analyze_run(run)
    assert "model" not in m["points"][0]["trials"][0]  # open trials keep their old shape
    (g,) = m["growth"]
    assert g["parameter"] == "rate" and g["quantity"] == "latency.overall.mean"
    assert g["model"] == "linear"
    assert g["coefficients"]["a"] == pytest.approx(0.5) and g["coefficients"]["b"] == pytest.approx(
        0.25
    )
    assert g["statement"] == "overall latency grows linearly: 0.5 + 0.25·x s (x = rate)"


# --- through the real runner ------------------------------------------------------------


def run_spec(text: str, root: Path) -> ExperimentOutcome:
    spec, data = load_spec_text(text)
    runner = ExperimentRunner(make_plan(spec, data), data, root)
    return asyncio.run(runner.execute())


def only_trial(out: ExperimentOutcome) -> tuple[dict[str, Any], pl.DataFrame]:
    m = analyze_run(out.run.path, write=True)
    ev_ = read_trial_log(out.run.trial_dir("p00-t00"))
    return m, ev_.with_columns((pl.col("t_ns") - pl.col("clock_offset_ns")).alias("t"))


def stage_t(ev_: pl.DataFrame, stage: str) -> pl.DataFrame:
    return ev_.filter(pl.col("stage") == stage).group_by("job").agg(pl.col("t").min())


def test_runner_batch_local_processes(tmp_path: Path) -> None:
    out = run_spec(
        """
name: batch-local
backend: {type: local, options: {slots: 4}}
job: {command: [/bin/sleep, "0.05"]}
load: {model: batch, jobs: 12, submitters: 3}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    m, ev_ = only_trial(out)
    model = m["points"][0]["trials"][0]["model"]
    ends = stage_t(ev_, "local_end")
    first = ev_.filter(pl.col("stage") == "submit")["t"].min()
    assert isinstance(first, int)
    last = ends["t"].max()
    assert isinstance(last, int)
    assert model["end_stage"] == "local_end" and model["ended"] == ends.height == 12
    assert model["makespan_s"] == pytest.approx((last - first) / 1e9)
    assert model["throughput_per_s"] == pytest.approx(12 / ((last - first) / 1e9))
    assert model["failed"] == 0 and model["completed"] == 12
    assert m["points"][0]["summary"]["model"]["throughput_per_s"]["mean"] == pytest.approx(
        model["throughput_per_s"]
    )


def test_runner_probe_noop(tmp_path: Path) -> None:
    out = run_spec(
        """
name: probe-noop
backend: {type: noop}
load: {model: probe, count: 5, gap: 0.02s, burst: {requests: 6, threads: [1, 3]}}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    m, ev_ = only_trial(out)
    model = m["points"][0]["trials"][0]["model"]
    subs = ev_.filter(pl.col("stage") == "submit")
    tags = subs["attrs"].str.json_path_match("$.probe")
    assert model["single"]["n"] == (tags == "single").sum() == 5
    acks = stage_t(ev_, "submit_ack").rename({"t": "ack"})
    calls = (
        subs.filter(tags == "single")
        .select("job", "t")
        .join(acks, on="job")
        .select(((pl.col("ack") - pl.col("t")) / 1e9).alias("d"))["d"]
    )
    assert model["single"]["mean"] == pytest.approx(calls.mean())
    assert set(model["bursts"]) == {"1", "3"}
    for k in ("1", "3"):
        b = model["bursts"][k]
        assert b["requests"] == 6 and b["request"]["n"] == (tags == f"burst{k}").sum() == 6
        assert b["per_request_s"] == pytest.approx(b["total_s"] / 6)
    assert model["single"]["statement"].endswith(" ms (α=0.05)")


def test_runner_sustain_noop(tmp_path: Path) -> None:
    out = run_spec(
        """
name: sustain-noop
backend: {type: noop, options: {runtime_s: 0.05}}
load: {model: sustain, users: 2, jobs_per_user: 2, sleep_coef: 0.05s}
trial: {duration: 0.6s}
timeouts: {status_interval: 0.05s}
""",
        tmp_path,
    )
    m, ev_ = only_trial(out)
    t = m["points"][0]["trials"][0]
    model = t["model"]
    counts = dict(ev_.group_by("stage").len().iter_rows())
    assert model["counts"]["submitted"] == counts["submit"]
    assert model["submit"]["n"] == counts["submit_ack"]
    assert model["counts"]["done"] == counts["client_done"] == counts["submit_ack"]
    assert model["counts"]["queries"] == counts["op_start"]
    assert model["query"]["n"] + model["counts"]["query_exceptions"] == counts["op_end"]
    per_agent = dict(ev_.filter(pl.col("stage") == "submit").group_by("agent").len().iter_rows())
    assert {u: d["submitted"] for u, d in model["per_user"].items()} == per_agent
    assert set(per_agent) == {"user0", "user1"}
    assert t["jobs"]["completed"] == model["counts"]["done"]
