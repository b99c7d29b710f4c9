"""A tier's EDGI records joined by its own id or the upstream id (issue 14 item 8): report
files written here, and the reference grid's own reports with a bridge that mixes both."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import polars as pl

from gridbench.jobflow.events.edgi.collector import ReportCollector, ingest_edgi
from gridbench.jobflow.events.edgi.join import joined_by_lines
from gridbench.jobflow.events.model import EVENT_SCHEMA
from gridbench.jobflow.reference import ReferenceGrid, build_config
from gridbench.jobflow.reference.config import merge
from test_ingest_helpers import client_events, record, two_tier_records, write_report
from test_ingest_reference import FAST

CHAIN = {"ce_entry", "ce_submit", "ce_done", "bridge_entry", "bridge_submit", "bridge_done"}


def _upstream(records: list[dict[str, Any]], jobs: set[int]) -> list[dict[str, Any]]:
    """The bridge's records with the CE's id (ce-i) in place of its own for ``jobs``."""
    out = []
    for r in records:
        i = int(r["job_id"].split("-")[1])
        out.append({**r, "job_id": f"ce-{i}"} if i in jobs else r)
    return out


def _chains(ev: pl.DataFrame) -> dict[str, set[str]]:
    return {j: set(s) for j, s in ev.group_by("job").agg(pl.col("stage").unique()).iter_rows()}


def test_a_tier_reporting_under_the_upstream_id_is_joined(tmp_path: Path) -> None:
    ce, br = two_tier_records(4)
    write_report(tmp_path / "ce" / "a.xml", ce)
    write_report(tmp_path / "bridge" / "a.xml", _upstream(br, {0, 1, 2, 3}))
    client = client_events([(f"j{i}", f"ce-{i}") for i in range(4)])
    res = ingest_edgi(client, [f"ce={tmp_path / 'ce'}", f"bridge={tmp_path / 'bridge'}"])
    assert res.warnings == []
    chains = _chains(res.events)
    assert sorted(chains) == ["j0", "j1", "j2", "j3"]
    assert all(c >= CHAIN for c in chains.values())
    assert res.stats["joined_by"] == {
        "ce": {"own": 12, "upstream": 0},
        "bridge": {"own": 0, "upstream": 16},
    }
    assert joined_by_lines(res.stats["joined_by"]) == [
        "tier ce: 12 records joined by own id",
        "tier bridge: 16 records joined by upstream id",
    ]
    # the bridge_done of j2 belongs to j2, not to whichever job the id names elsewhere
    t = res.events.filter((pl.col("job") == "j2") & (pl.col("stage") == "bridge_done"))
    assert json.loads(t["attrs"].item()) == {"id": "ce-2", "status": "Finished"}


def test_a_tier_mixing_ids_and_a_bad_record(tmp_path: Path) -> None:
    ce, br = two_tier_records(4)
    bad = record("job_status", "br-9", "2024-06-10 12:03:00")  # job_status without <status>
    stranger = record("job_entry", "xx-1", "2024-06-10 12:03:00")  # nobody's id
    write_report(tmp_path / "ce" / "a.xml", ce)
    write_report(tmp_path / "bridge" / "a.xml", [*_upstream(br, {1, 3}), bad, stranger])
    client = client_events([(f"j{i}", f"ce-{i}") for i in range(4)])
    res = ingest_edgi(client, [f"ce={tmp_path / 'ce'}", f"bridge={tmp_path / 'bridge'}"])
    assert all(c >= CHAIN for c in _chains(res.events).values())
    assert res.stats["joined_by"]["bridge"] == {"own": 8, "upstream": 8}
    assert res.stats["bad_records"] == 1
    assert any("without <status>" in w for w in res.warnings), res.warnings
    assert res.stats["unjoined"] == {"bridge": 1}  # the stranger is counted, never guessed
    assert (
        "tier bridge: 16 records joined, 8 by its own id and 8 by the upstream id (mixed)"
        in joined_by_lines(res.stats["joined_by"])
    )


async def test_reference_grid_bridge_mixing_ids_is_joined_live(tmp_path: Path) -> None:
    over = merge(FAST, {"reports": {"dir": str(tmp_path), "bridge_ids": "mixed"}})
    grid = ReferenceGrid(build_config("sequential", overrides=over))
    url = grid.start_background()
    n = 6
    try:
        async with httpx.AsyncClient(base_url=url) as c:
            rows = []
            for k in range(n):
                t = time.time_ns()
                r = await c.post("/jobs", json={"name": f"job-{k}"})
                assert r.status_code == 201, r.text
                ack = json.dumps({"backend_id": r.json()["id"]})
                rows.append((f"job-{k}", "submit_ack", t, "client", 1000, "local", 0, ack))
        client = pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")
        col = ReportCollector([f"{url}/reports/"])
        got = [(await col.apoll(client)).events]
        deadline = time.monotonic() + 30
        while pl.concat(got).filter(pl.col("stage") == "ce_done").height < n:
            assert time.monotonic() < deadline, "reports did not arrive"
            await asyncio.sleep(0.2)
            got.append((await col.apoll()).events)
        final = await col.apoll(final=True)
        got.append(final.events)
    finally:
        grid.stop()
    ev = pl.concat(got)
    assert final.stats["unjoined"] == {}
    chains = _chains(ev)
    assert len(chains) == n and all(c >= CHAIN for c in chains.values())
    ids = ev.filter(pl.col("stage") == "bridge_entry")["attrs"].str.json_path_match("$.id")
    assert ids.str.starts_with("ce-").any() and ids.str.starts_with("br-").any()
    by = final.stats["joined_by"]["bridge"]
    assert by["own"] > 0 and by["upstream"] > 0
    assert by["own"] + by["upstream"] == ev.filter(pl.col("source") == "bridge").height


def test_two_jobs_claiming_one_server_id_are_counted_and_the_first_kept(tmp_path: Path) -> None:
    """The CE hands job 1 to the bridge under job 0's bridge id: one conflict, in the one
    batch a whole ingest reads (a clash inside a batch once went uncounted)."""
    ce, br = two_tier_records(3)
    ce = [{**r, "next_id": "br-0"} if r.get("next_id") == "br-1" else r for r in ce]
    write_report(tmp_path / "ce" / "a.xml", ce)
    write_report(tmp_path / "bridge" / "a.xml", [r for r in br if r["job_id"] != "br-1"])
    client = client_events([(f"j{i}", f"ce-{i}") for i in range(3)])
    res = ingest_edgi(client, [f"ce={tmp_path / 'ce'}", f"bridge={tmp_path / 'bridge'}"])
    assert res.stats["id_conflicts"] == 1
    assert any("1 server id(s) were claimed by two different jobs" in w for w in res.warnings)
    chains = _chains(res.events)
    assert chains["j0"] >= CHAIN and chains["j2"] >= CHAIN  # br-0 stays job 0's
    assert chains["j1"].isdisjoint({"bridge_entry", "bridge_submit", "bridge_done"})
