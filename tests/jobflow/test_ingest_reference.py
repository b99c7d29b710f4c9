"""The EDGI ingester against the reference grid's own published reports (real HTTP service)."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any

import httpx
import polars as pl

from gridbench.jobflow.events.edgi.collector import ReportCollector
from gridbench.jobflow.events.model import EVENT_SCHEMA
from gridbench.jobflow.reference import ReferenceGrid, build_config
from gridbench.jobflow.reference.config import merge

FAST: dict[str, Any] = {
    "ce": {"service": {"dist": "fixed", "mean": 0.005}},
    "bridge": {
        "service": {"dist": "fixed", "mean": 0.005},
        "transfer": {"dist": "fixed", "mean": 0.005},
    },
    "workers": {"runtime": {"dist": "fixed", "mean": 0.05}},
    "status_update": {"per_job_cost_s": 0.01, "interval_s": 0.05},
    "reports": {"rotate_s": 0.3, "publication_delay_s": 0.5},
}
CHAIN = ["ce_entry", "ce_submit", "bridge_entry", "bridge_submit", "bridge_done", "ce_done"]


async def test_reference_grid_reports_are_ingested_live(tmp_path: Path) -> None:
    cfg = build_config("sequential", overrides=merge(FAST, {"reports": {"dir": str(tmp_path)}}))
    grid = ReferenceGrid(cfg)
    url = grid.start_background()
    try:
        async with httpx.AsyncClient(base_url=url) as c:
            rows = []
            for k in range(6):
                t = time.time_ns()
                r = await c.post("/jobs", json={"name": f"job-{k}"})
                assert r.status_code == 201
                ack = json.dumps({"backend_id": r.json()["id"]})
                rows.append((f"job-{k}", "submit_ack", t, "client", 1000, "local", 0, ack))
        client = pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")
        col = ReportCollector([f"{url}/reports/"])  # a tier root: ce/ and bridge/
        got: list[pl.DataFrame] = [(await col.apoll(client)).events]
        deadline = time.monotonic() + 30
        while pl.concat(got).filter(pl.col("stage") == "ce_done").height < 6:
            assert time.monotonic() < deadline, "reports did not arrive"
            await asyncio.sleep(0.2)
            res = await col.apoll()
            assert res.warnings == []
            got.append(res.events)
        final = await col.apoll(final=True)
        got.append(final.events)
    finally:
        grid.stop()
    ev = pl.concat(got)
    assert final.stats["tiers"] == ["ce", "bridge"]
    assert final.stats["unjoined"] == {}
    assert ev.unique().height == ev.height  # each event returned once
    for k in range(6):
        mine = ev.filter(pl.col("job") == f"job-{k}")
        firsts = mine.group_by("stage").agg(pl.col("t_ns").min())
        t = dict(firsts.iter_rows())
        assert all(s in t for s in CHAIN), sorted(t)
        # the chain is ordered within the reports' 1 ms precision
        assert all(t[a] <= t[b] for a, b in itertools.pairwise(CHAIN))
        assert set(mine.filter(pl.col("stage").is_in(CHAIN))["precision_ns"]) == {1_000_000}
