"""Real clock skew: agents whose wall clock libfaketime moves by +2.5 s (one also running
1000 ppm fast). clock_sync.measure must find the offset within milliseconds and the drift
with its sign; events stamped on the skewed clock, analysed with the recorded offset, give no
negative latency, and without it give negatives that are counted and reported."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from clock_agent import AGENT
from clock_fixtures import FakeTimeAgent, StampingServer
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.events.chain import Stage, StageChain
from gridbench.jobflow.events.ingest_run import ingest_jsonl_run
from gridbench.jobflow.events.jsonl import write_jsonl
from gridbench.jobflow.events.log import EVENTS_FILE, read_events
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.report import build_report
from gridbench.jobflow.run.clock_sync import OffsetEstimate, drift_ppm

SKEW_NS = 2_500_000_000
JOBS = 20
QUEUE_MS, RUN_MS = 20.0, 30.0
GAP_MS = 150.0  # sequential jobs take ~50 ms (more on a loaded machine): never late
SEGMENT = "submit->queued"  # agent clock -> server (controller) clock: where skew shows


@pytest.fixture(scope="module")
def skewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeTimeAgent]:
    agent = FakeTimeAgent(tmp_path_factory.mktemp("skewed"), "+2.5s")
    agent.start()
    yield agent
    agent.stop()


@pytest.fixture(scope="module")
def drifting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeTimeAgent]:
    agent = FakeTimeAgent(tmp_path_factory.mktemp("drifting"), "+2.5s x1.001")
    agent.start()
    yield agent
    agent.stop()


def test_offset_of_a_skewed_agent_is_found_within_milliseconds(skewed: FakeTimeAgent) -> None:
    est = asyncio.run(skewed.estimate())
    assert est.probes == 32
    assert 0 < est.bound_ns < 2_000_000, est  # loopback: the kept round trip is short
    assert est.bound_ns == (est.delay_ns + 1) // 2
    assert abs(est.offset_ns - SKEW_NS) < 3_000_000, est
    # the truth is inside the stated bound, up to the two processes' clock reads
    assert abs(est.offset_ns - SKEW_NS) <= est.bound_ns + 500_000, est


def test_drift_of_a_fast_agent_is_detected_with_its_sign(drifting: FakeTimeAgent) -> None:
    async def twice() -> tuple[OffsetEstimate, OffsetEstimate]:
        before = await drifting.estimate()
        await asyncio.sleep(2.0)
        return before, await drifting.estimate()

    before, after = asyncio.run(twice())
    # +2.5 s at the agent's start, then 1 ms more per second since
    assert SKEW_NS <= before.offset_ns < SKEW_NS + 200_000_000, before
    assert after.offset_ns > before.offset_ns
    ppm = drift_ppm(before, after)
    assert ppm is not None
    assert 700.0 < ppm < 1300.0, (ppm, before, after)  # the agent's clock runs fast: +


def _chain() -> StageChain:
    return StageChain(
        stages=(Stage("submit", "client"), Stage("queued", "server"), Stage("finished", "server"))
    )


def _write_trial(run: Path, events: pl.DataFrame, agents: dict[str, Any]) -> Path:
    trial = run / "trials" / "p00-t00"
    trial.mkdir(parents=True)
    events.write_csv(trial / EVENTS_FILE)
    t0 = int(events.filter(pl.col("stage") == "intended")["t_ns"].min())  # type: ignore[arg-type]
    info = {
        "trial_id": "p00-t00",
        "chain": _chain().to_dict(),
        "load_model": "open",
        "planned_jobs": JOBS,
        "status": "complete",
        # the trial starts on the controller's clock
        "started_ns": t0 - agents[AGENT]["clock_offset_ns"],
        "agents": agents,
        "cpu_count": 2,
    }
    (trial / "trial.json").write_text(json.dumps(info))
    return run


@pytest.fixture(scope="module")
def stamped(skewed: FakeTimeAgent, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One trial's events: client stages stamped by the skewed agent through Recorder with
    its estimated offset, server stages on the controller's clock."""
    work = tmp_path_factory.mktemp("stamped")
    est = asyncio.run(skewed.estimate())
    server = StampingServer(work / "server.csv", QUEUE_MS, RUN_MS)
    answer = skewed.command(
        f"RUN {JOBS} {GAP_MS} {est.offset_ns} {work / 'client.csv'} {server.port}"
    )
    server.close()
    assert answer == f"OK {JOBS}"
    events = pl.concat([read_events(work / "client.csv"), read_events(work / "server.csv")])
    return {"events": events, "estimate": est, "work": work}


def test_corrected_analysis_has_no_negative_latency(stamped: dict[str, Any]) -> None:
    est: OffsetEstimate = stamped["estimate"]
    ev: pl.DataFrame = stamped["events"]
    client = ev.filter(pl.col("agent") == AGENT)
    assert set(client["clock_offset_ns"].to_list()) == {est.offset_ns}  # recorded per event
    agents = {
        AGENT: {"clock_offset_ns": est.offset_ns, "clock_uncertainty_ns": est.bound_ns},
        "local": {"clock_offset_ns": 0, "clock_uncertainty_ns": 0},
    }
    run = _write_trial(stamped["work"] / "corrected", ev, agents)
    # raw agent-clock times stay in events.csv
    raw = read_trial_log(run / "trials" / "p00-t00")
    assert raw.filter(pl.col("agent") == AGENT)["t_ns"].to_list() == client["t_ns"].to_list()

    m = analyze_run(run)
    t = m["points"][0]["trials"][0]
    v = t["validity"]
    assert v["negative_segments"] == {}
    assert v["backwards_jobs"] == 0
    lat = t["latency"][SEGMENT]
    assert lat["n"] == JOBS
    assert lat["min"] > 0
    # the server waited QUEUE_MS before stamping; loopback adds little
    assert QUEUE_MS / 1e3 <= lat["p50"] + est.bound_ns / 1e9 < QUEUE_MS / 1e3 + 0.05
    assert t["valid"], v["reasons"]
    [clock] = [c for c in v["clock_bounds"] if c["segment"] == SEGMENT]
    assert clock["agent"] == AGENT
    assert clock["bound_s"] == pytest.approx(est.bound_ns / 1e9)
    assert not clock["flagged"]
    assert t["clocks"]["agents"][AGENT]["offset_ns"] == est.offset_ns

    report = build_report(m, {})
    [table] = [s for s in report.sections if getattr(s, "id", "") == "agents-clocks"]
    cells = {c.key: i for i, c in enumerate(table.columns)}
    row = next(r for r in table.rows if r[cells["agent"]] == AGENT)
    assert table.text is not None
    text = table.text[table.rows.index(row)][cells["offset ms (± bound)"]]
    assert text.startswith("+2500.") or text.startswith("+2499."), text


def test_uncorrected_analysis_counts_and_reports_negatives(stamped: dict[str, Any]) -> None:
    ev = stamped["events"].with_columns(pl.lit(0, pl.Int64).alias("clock_offset_ns"))
    agents = {AGENT: {"clock_offset_ns": 0, "clock_uncertainty_ns": 0}}
    run = _write_trial(stamped["work"] / "uncorrected", ev, agents)
    m = analyze_run(run)
    t = m["points"][0]["trials"][0]
    v = t["validity"]
    assert v["negative_segments"] == {
        SEGMENT: {"beyond_uncertainty": JOBS, "within_uncertainty": 0}
    }
    assert v["backwards_jobs"] == JOBS
    assert not t["valid"]
    assert any(f"negative {SEGMENT}" in r and str(JOBS) in r for r in v["reasons"])
    assert t["latency"][SEGMENT]["n"] == 0  # left out, never clipped to 0
    # a one-clock view (no offsets, no bounds): no clocks table; the validity table says it
    report = build_report(m, {})
    ids = [getattr(s, "id", "") for s in report.sections]
    assert "agents-clocks" not in ids
    validity = next(s for s in report.sections if getattr(s, "id", "") == "validity")
    col = [c.key for c in validity.columns].index("negative segments")
    assert validity.text is not None
    assert validity.text[0][col] == f"{SEGMENT}: {JOBS}"


def test_ingested_skewed_events_keep_their_offsets(stamped: dict[str, Any]) -> None:
    """The same stamps through `gridbench ingest jsonl`: each event's clock_offset_ns is
    kept, trial.json lists the agent's offset, and the analysis finds no negative."""
    est: OffsetEstimate = stamped["estimate"]
    work: Path = stamped["work"]
    write_jsonl(stamped["events"], work / "events.jsonl")
    run = ingest_jsonl_run(work / "events.jsonl", work / "ingested", chain=_chain()).run_dir
    trial = json.loads((run / "trials" / "ingested" / "trial.json").read_text())
    assert trial["agents"][AGENT] == {
        "clock_offset_ns": est.offset_ns,
        "clock_uncertainty_ns": None,
    }
    assert trial["agents"]["local"] == {"clock_offset_ns": 0, "clock_uncertainty_ns": 0}
    t = analyze_run(run)["points"][0]["trials"][0]
    assert t["validity"]["negative_segments"] == {}
    assert t["latency"][SEGMENT]["n"] == JOBS
    assert t["latency"][SEGMENT]["min"] > 0
