"""Analysis in the controller's time: offsets applied once, each stamp's bound from trial.json,
the clock-bound validity rule and negative segments within and beyond the uncertainty."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import test_analysis_fixtures as fx
from gridbench.errors import ResultsError
from gridbench.jobflow.analysis.clocks import BOUND_COLUMN, clock_summary, to_controller_time
from gridbench.jobflow.analysis.config import AnalysisConfig
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.analysis.load import read_trial_events, read_trial_info
from gridbench.jobflow.analysis.trial import analyze_trial
from gridbench.jobflow.analysis.validity import ValidityConfig
from gridbench.jobflow.events.chain import Stage, StageChain
from gridbench.jobflow.metrics_schema import validate_metrics
from gridbench.jobflow.spec.load import load_spec_text

CHAIN = StageChain(stages=(Stage("submit", "client"), Stage("queued", "server")))
SEG = "submit->queued"
N = 50
AGENT = "agent-1"
OFFSET_NS = 2_500_000_000


def _events(queue_s: float, offset_ns: int = OFFSET_NS, skew_ns: int = OFFSET_NS) -> pl.DataFrame:
    """N jobs: intended/submit/client_done stamped by AGENT whose clock is ``skew_ns`` ahead
    (recorded offset ``offset_ns``), queued by the server on the controller's clock."""
    i = np.arange(N, dtype=float)
    client = fx.times_frame(
        {"intended": i, "submit": i + 0.001, "client_done": i + 0.5}
    ).with_columns(
        (pl.col("t_ns") + skew_ns).alias("t_ns"),
        pl.lit(AGENT).alias("agent"),
        pl.lit(offset_ns, pl.Int64).alias("clock_offset_ns"),
    )
    server = fx.times_frame({"queued": i + 0.001 + queue_s})
    return pl.concat([client, server])


def _agents(bound_ns: int | None, offset_ns: int = OFFSET_NS) -> dict[str, object]:
    return {AGENT: {"clock_offset_ns": offset_ns, "clock_uncertainty_ns": bound_ns}}


def _trial(ev: pl.DataFrame, bound_ns: int | None, cfg: AnalysisConfig | None = None) -> dict:
    info = fx.info(CHAIN, planned=N, agents=_agents(bound_ns))
    return analyze_trial(info, ev, cfg=cfg).metrics


def test_to_controller_time_subtracts_the_offset_and_joins_the_bound() -> None:
    ev = _events(0.02)
    out = to_controller_time(ev, _agents(300_000))
    raw = ev.filter(pl.col("agent") == AGENT)["t_ns"]
    moved = out.filter(pl.col("agent") == AGENT)
    assert (moved["t_ns"] == raw - OFFSET_NS).all()
    assert set(moved[BOUND_COLUMN].to_list()) == {300_000}
    # the server's stamps: agent 'local' is not listed, so no bound and no move
    local = out.filter(pl.col("agent") == "local")
    assert set(local[BOUND_COLUMN].to_list()) == {0}
    assert (local["t_ns"] == ev.filter(pl.col("agent") == "local")["t_ns"]).all()
    assert set(out["clock_offset_ns"].to_list()) == {0}  # applied
    assert to_controller_time(out, _agents(300_000)).equals(out)  # once only
    # an unknown bound (ingested agents have null) counts as 0, never as an error
    assert set(to_controller_time(ev, _agents(None))[BOUND_COLUMN].to_list()) == {0}


def test_corrected_trial_has_positive_latencies_and_a_small_bound_passes() -> None:
    m = _trial(_events(0.02), 100_000)
    v = m["validity"]
    assert m["valid"], v["reasons"]
    assert m["latency"][SEG]["min"] == pytest.approx(0.02, abs=1e-6)
    assert v["negative_segments"] == {}
    assert v["clock_bounds"] == [
        {
            "segment": SEG,
            "agent": AGENT,
            "bound_s": 1e-4,
            "latency_s": pytest.approx(0.02, abs=1e-6),
            "flagged": False,
        }
    ]


def test_a_bound_not_small_against_the_segment_invalidates_with_the_numbers() -> None:
    m = _trial(_events(0.02), 5_000_000)  # ±5 ms against a 20 ms segment: > 10%
    v = m["validity"]
    assert not m["valid"]
    [reason] = [r for r in v["reasons"] if "clock of agent" in r]
    assert reason == (
        f"the clock of agent {AGENT} is known only to ±5 ms on {SEG}, more than 10% of its "
        "median 20 ms: the segment cannot be resolved across clocks"
    )
    assert v["clock_bounds"][0]["flagged"] is True
    # the factor is configurable: at 50% the same trial passes
    cfg = AnalysisConfig(validity=ValidityConfig(clock_factor=0.5))
    assert _trial(_events(0.02), 5_000_000, cfg)["valid"]


def test_negatives_within_the_bound_are_kept_and_counted_beyond_it_left_out() -> None:
    # the server stamps 1 ms before the (corrected) submit: within ±5 ms, but not within ±0.1
    ev = _events(-0.001)
    cfg = AnalysisConfig(validity=ValidityConfig(clock_factor=10.0))
    within = _trial(ev, 5_000_000, cfg)
    w = within["validity"]
    assert w["negative_segments"] == {SEG: {"beyond_uncertainty": 0, "within_uncertainty": N}}
    assert within["latency"][SEG]["n"] == N  # kept, not clipped
    assert within["latency"][SEG]["max"] == pytest.approx(-0.001, abs=1e-6)
    assert any(f"{N} job(s) have a negative {SEG} within" in x for x in w["warnings"])
    beyond = _trial(ev, 100_000)
    b = beyond["validity"]
    assert b["negative_segments"] == {SEG: {"beyond_uncertainty": N, "within_uncertainty": 0}}
    assert b["backwards_jobs"] == N
    assert beyond["latency"][SEG]["n"] == 0
    assert not beyond["valid"]


def test_a_wrong_offset_shows_as_negative_segments() -> None:
    m = _trial(_events(0.02, offset_ns=0), 0)  # the agent's skew was never removed
    assert m["validity"]["negative_segments"][SEG]["beyond_uncertainty"] == N


def test_read_trial_events_applies_the_offsets_of_trial_json(tmp_path: Path) -> None:
    info = fx.info(CHAIN, planned=N)
    d = fx.write_trial(tmp_path, info, _events(0.02), extra={"agents": _agents(200_000)})
    ev = read_trial_events(d, read_trial_info(d))
    sub = ev.filter(pl.col("stage") == "submit")["t_ns"]
    assert int(sub.min()) == fx.T0 + 1_000_000  # type: ignore[arg-type]
    assert set(ev.filter(pl.col("agent") == AGENT)[BOUND_COLUMN].to_list()) == {200_000}


def test_spec_validity_clock_factor_reaches_the_analysis(tmp_path: Path) -> None:
    info = fx.info(CHAIN, planned=N)
    fx.write_trial(tmp_path, info, _events(0.02), extra={"agents": _agents(5_000_000)})
    assert not analyze_run(tmp_path)["points"][0]["trials"][0]["valid"]
    (tmp_path / "spec.yaml").write_text("name: x\nvalidity: {clock_factor: 0.5}\n")
    m = analyze_run(tmp_path)
    assert m["points"][0]["trials"][0]["valid"]
    assert m["analysis"]["clock_factor"] == 0.5


def test_spec_accepts_validity_clock_factor_and_rejects_a_bad_one() -> None:
    base = "name: t\nbackend: {type: noop}\nload: {rate: 1/s}\ntrial: {jobs: 2}\n"
    spec, _ = load_spec_text(base + "validity: {clock_factor: 0.25}\n")
    assert spec.validity.clock_factor == 0.25
    with pytest.raises(Exception, match="clock_factor"):
        load_spec_text(base + "validity: {clock_factor: 0}\n")


def test_clock_summary_lists_agents_for_the_report() -> None:
    agents = {
        AGENT: {
            "clock_offset_ns": 5,
            "clock_uncertainty_ns": 2,
            "drift_ppm": 1.5,
            "start_skew_ns": 7,
            "host": "h1",
            "sync": {"available": False, "reason": "chronyc is not installed"},
        }
    }
    assert clock_summary(agents, {}) == {
        "controller_sync": "not recorded",
        "agents": {
            AGENT: {
                "offset_ns": 5,
                "bound_ns": 2,
                "drift_ppm": 1.5,
                "start_skew_ns": 7,
                "host": "h1",
                "sync": "unavailable: chronyc is not installed",
            }
        },
    }


def test_metrics_schema_checks_the_clock_fields(tmp_path: Path) -> None:
    info = fx.info(CHAIN, planned=N)
    fx.write_trial(tmp_path, info, _events(0.02), extra={"agents": _agents(100_000)})
    m = analyze_run(tmp_path)
    validate_metrics(m)  # the analysis' own document passes
    m["points"][0]["trials"][0]["clocks"]["agents"][AGENT]["offset_ns"] = "2.5 s"
    with pytest.raises(ResultsError, match=f"clocks.agents.{AGENT}.offset_ns"):
        validate_metrics(m)
    m = analyze_run(tmp_path)
    bad = {SEG: {"beyond_uncertainty": "many"}}
    m["points"][0]["trials"][0]["validity"]["negative_segments"] = bad
    with pytest.raises(ResultsError, match="negative_segments"):
        validate_metrics(m)


def test_a_segment_stamped_on_one_clock_carries_no_bound() -> None:
    # submit -> client_done: both stamped by the agent, its offset cancels out
    chain = StageChain(
        stages=(
            Stage("submit", "client"),
            Stage("queued", "server"),
            Stage("client_done", "client"),
        )
    )
    info = fx.info(chain, planned=N, agents=_agents(30_000_000))  # ±30 ms
    cfg = AnalysisConfig(validity=ValidityConfig(clock_factor=0.5))
    m = analyze_trial(info, _events(0.02), cfg=cfg).metrics
    by_seg = {c["segment"]: c for c in m["validity"]["clock_bounds"]}
    assert set(by_seg) == {SEG, "queued->client_done"}  # both cross the agent/server clocks
    assert by_seg["queued->client_done"]["bound_s"] == pytest.approx(0.03)
    assert by_seg["queued->client_done"]["flagged"] is False  # 30 ms < 50% of ~479 ms
    assert by_seg[SEG]["flagged"] is True  # 30 ms > 50% of 20 ms
    two = StageChain(stages=(Stage("submit", "client"), Stage("client_done", "client")))
    m2 = analyze_trial(fx.info(two, planned=N, agents=_agents(30_000_000)), _events(0.02)).metrics
    assert m2["validity"]["clock_bounds"] == []
    assert m2["valid"], m2["validity"]["reasons"]
