"""Results directories built from ingested events (`gridbench ingest edgi|jsonl`)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from gridbench.errors import IngestError, ResultsError
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.events.ingest_run import (
    edgi_chain,
    estimate_offered_rate,
    infer_chain,
    ingest_edgi_run,
    ingest_jsonl_run,
)
from gridbench.jobflow.events.jsonl import write_jsonl
from gridbench.jobflow.events.log import EventLog
from gridbench.jobflow.events.trial_log import read_trial_log
from test_ingest_helpers import T0_NS, client_events, serve, two_tier_records, write_report

EDGI_STAGES = [
    "submit", "ce_entry", "ce_submit", "bridge_entry", "bridge_submit",
    "bridge_done", "ce_done", "client_done",
]  # fmt: skip


def test_edgi_chain_matches_the_reference_chain() -> None:
    ch = edgi_chain()
    assert ch.names() == EDGI_STAGES
    segs = {s.name: (s.start, s.end) for s in ch.all_segments() if s.component}
    assert segs == {
        "ce_prep": ("ce_entry", "ce_submit"),
        "bridge_prep": ("bridge_entry", "bridge_submit"),
        "dg": ("bridge_submit", "bridge_done"),
        "ce_finish": ("bridge_done", "ce_done"),
    }
    hops = [(s.start, s.end) for s in ch.all_segments() if not s.component]
    assert hops == [
        ("submit", "ce_entry"),
        ("ce_submit", "bridge_entry"),
        ("ce_done", "client_done"),
    ]
    assert [s.source for s in ch.stages] == [
        "client",
        "ce",
        "ce",
        "bridge",
        "bridge",
        "bridge",
        "ce",
        "client",
    ]
    assert ch.stages[0].label.startswith("T1") and ch.stages[-1].label.startswith("T8")
    assert StageChain.from_dict(ch.to_dict()) == ch


def _client_csv(path: Path, n: int) -> None:
    ev = client_events([(f"j{i}", f"ce-{i}") for i in range(n)])
    with EventLog(path) as log:
        for r in ev.iter_rows(named=True):
            log.append(
                r["job"],
                r["stage"],
                r["t_ns"],
                attrs=json.loads(r["attrs"]) if r["attrs"] else None,
            )
        for i in range(n):
            log.append(f"j{i}", "client_done", T0_NS + 200_000_000_000 + i * 1_000_000_000)


def test_ingest_edgi_run_writes_an_analysable_run(tmp_path: Path) -> None:
    ce, br = two_tier_records(4)
    write_report(tmp_path / "site" / "ce" / "a.xml", ce)
    write_report(tmp_path / "site" / "bridge" / "a.xml", br)
    _client_csv(tmp_path / "client.csv", 4)
    out = tmp_path / "run"
    with serve(tmp_path / "site") as base:
        res = ingest_edgi_run(tmp_path / "client.csv", [f"{base}/ce/", f"{base}/bridge/"], out)
    assert res.run_dir == out
    assert res.jobs == 4
    ev = read_trial_log(out / "trials" / "ingested")
    assert ev.height == res.events == 4 * 4 + 4 * 7
    assert set(ev["source"]) == {"client", "ce", "bridge"}
    assert ev["t_ns"].is_sorted()
    trial = json.loads((out / "trials" / "ingested" / "trial.json").read_text())
    assert trial["trial_id"] == "ingested"
    assert trial["offered_rate_per_s"] == pytest.approx(1.0)  # client_events: 1 job/s
    assert trial["point"] == {"rate": pytest.approx(60.0)}
    assert trial["planned_jobs"] == 4
    assert trial["started_ns"] == T0_NS
    assert trial["submit_end_ns"] == T0_NS + 3_001_000_000
    assert trial["ended_ns"] == int(ev["t_ns"].max())  # type: ignore[arg-type]
    chain = StageChain.from_dict(trial["chain"])
    assert chain.names() == EDGI_STAGES
    prec = {s.name: s.precision_ns for s in chain.stages}
    assert prec["ce_entry"] == 1_000_000 and prec["bridge_done"] == 1_000_000_000
    assert prec["submit"] == 1000
    exp = json.loads((out / "experiment.json").read_text())
    assert exp["status"] == "complete" and exp["backend"] == "ingest:edgi"
    ing = json.loads((out / "ingest.json").read_text())
    assert ing["stats"]["unjoined"] == {}
    # refuses to overwrite
    with pytest.raises(ResultsError):
        ingest_edgi_run(tmp_path / "client.csv", [str(tmp_path / "site")], out)


def test_ingest_edgi_run_needs_submit_acks(tmp_path: Path) -> None:
    with EventLog(tmp_path / "c.csv") as log:
        log.append("j", "submit", T0_NS)
    with pytest.raises(IngestError) as err:
        ingest_edgi_run(tmp_path / "c.csv", [str(tmp_path)], tmp_path / "out")
    assert "submit_ack" in err.value.message


def test_ingest_jsonl_run_infers_the_edgi_chain(tmp_path: Path) -> None:
    ce, br = two_tier_records(3)
    write_report(tmp_path / "ce" / "a.xml", ce)
    write_report(tmp_path / "br" / "a.xml", br)
    _client_csv(tmp_path / "client.csv", 3)
    first = ingest_edgi_run(
        tmp_path / "client.csv", [str(tmp_path / "ce"), str(tmp_path / "br")], tmp_path / "r1"
    )
    ev = read_trial_log(first.run_dir / "trials" / "ingested")
    write_jsonl(ev, tmp_path / "all.jsonl")
    res = ingest_jsonl_run(tmp_path / "all.jsonl", tmp_path / "r2")
    trial = json.loads((res.run_dir / "trials" / "ingested" / "trial.json").read_text())
    assert StageChain.from_dict(trial["chain"]).names() == EDGI_STAGES
    back = read_trial_log(res.run_dir / "trials" / "ingested")
    assert back.equals(ev)


def test_infer_generic_chain_and_rate() -> None:
    rows = []
    for i in range(5):
        t = i * 500_000_000
        rows += [(f"j{i}", "submit", t), (f"j{i}", "queued", t + 10), (f"j{i}", "started", t + 50),
                 (f"j{i}", "finished", t + 90), (f"j{i}", "submit_ack", t + 1)]  # fmt: skip
    ev = pl.DataFrame(
        rows, schema={"job": pl.String, "stage": pl.String, "t_ns": pl.Int64}, orient="row"
    )
    ev = ev.with_columns(source=pl.lit("x"), precision_ns=pl.lit(1000, pl.Int64))
    ch = infer_chain(ev)
    assert ch.names() == ["submit", "queued", "started", "finished"]
    assert [g.name for g in ch.all_segments()] == [
        "submit->queued",
        "queued->started",
        "started->finished",
    ]
    assert estimate_offered_rate(ev) == pytest.approx(2.0)


def test_reingest_replaces_server_events_already_in_the_log(tmp_path: Path) -> None:
    ce, br = two_tier_records(2)
    write_report(tmp_path / "ce" / "a.xml", ce)
    write_report(tmp_path / "br" / "a.xml", br)
    _client_csv(tmp_path / "client.csv", 2)
    reports = [str(tmp_path / "ce"), str(tmp_path / "br")]
    first = ingest_edgi_run(tmp_path / "client.csv", reports, tmp_path / "r1")
    again = ingest_edgi_run(
        first.run_dir / "trials" / "ingested" / "events.arrows", reports, tmp_path / "r2"
    )
    assert again.events == first.events
    assert any("14 event(s) of tiers ce, bridge were already present" in w for w in again.warnings)
