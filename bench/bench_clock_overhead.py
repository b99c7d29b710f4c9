"""Benchmark: the cost of moving a trial's events to the controller's clock (issue 13).

Generates an events.csv of ``--jobs`` jobs x 10 stages: client stages stamped by two agents
with offsets (+2.5 s, −40 ms) and bounds, server stages on the controller's clock. Then,
best of ``--repeat`` runs each, in this process:

1. baseline: ``read_events`` of the file (what every analysis pays);
2. ``to_controller_time``: t_ns − clock_offset_ns and each stamp's bound joined by agent;
3. ``stage_clocks``: the per-stage bounds and agents the validity rule and tolerances use;
4. the same two on a one-clock trial (offsets 0, bounds 0: the fast path);
5. ``timeline_of`` (the pivot to one row per job), for scale.

    .venv/bin/python bench/bench_clock_overhead.py [--jobs 300000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gridbench.jobflow.analysis.clocks import stage_clocks, to_controller_time
from gridbench.jobflow.analysis.reduce import timeline_of
from gridbench.jobflow.events.log import read_events
from gridbench.jobflow.events.model import EVENT_SCHEMA

CLIENT = ("intended", "submit", "submit_ack", "client_done")
SERVER = ("ce_entry", "ce_submit", "bridge_entry", "bridge_submit", "bridge_done", "ce_done")
AGENTS = {
    "agent-0": {"clock_offset_ns": 2_500_000_000, "clock_uncertainty_ns": 40_000},
    "agent-1": {"clock_offset_ns": -40_000_000, "clock_uncertainty_ns": 90_000},
    "local": {"clock_offset_ns": 0, "clock_uncertainty_ns": 0},
}


def make_events(jobs: int, seed: int = 1) -> pl.DataFrame:
    """jobs x 10 events, client stages on the agents' clocks, server stages on local."""
    rng = np.random.default_rng(seed)
    t0 = 1_700_000_000_000_000_000
    start = t0 + np.arange(jobs, dtype=np.int64) * 1_000_000
    agent = np.where(np.arange(jobs) % 2 == 0, "agent-0", "agent-1")
    offset = np.where(agent == "agent-0", 2_500_000_000, -40_000_000).astype(np.int64)
    frames = []
    names = np.array([f"j{i:08d}" for i in range(jobs)])
    for k, stage in enumerate(CLIENT[:2] + SERVER + CLIENT[2:]):
        t = start + k * 50_000_000 + rng.integers(0, 1_000_000, jobs)
        client = stage in CLIENT
        frames.append(
            pl.DataFrame(
                {
                    "job": names,
                    "stage": [stage] * jobs,
                    "t_ns": t + offset if client else t,
                    "source": ["client" if client else "ce"] * jobs,
                    "precision_ns": [1_000] * jobs,
                    "agent": agent if client else np.full(jobs, "local"),
                    "clock_offset_ns": offset if client else np.zeros(jobs, np.int64),
                    "attrs": [None] * jobs,
                },
                schema=EVENT_SCHEMA,
            )
        )
    return pl.concat(frames)


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    stages = CLIENT + SERVER
    with tempfile.TemporaryDirectory(prefix="gb-clock-bench-") as tmp:
        path = Path(tmp) / "events.csv"
        make_events(args.jobs).write_csv(path)
        ev = read_events(path)
        print(f"{args.jobs:,} jobs, {ev.height:,} events ({path.stat().st_size / 1e6:.0f} MB)")
        read_s = best(lambda: read_events(path), args.repeat)
    moved = to_controller_time(ev, AGENTS)
    one = ev.with_columns(pl.lit(0, pl.Int64).alias("clock_offset_ns"))
    one_moved = to_controller_time(one, {"local": AGENTS["local"]})
    rows = [
        ("read_events (baseline)", read_s),
        ("to_controller_time, 2 agents", best(lambda: to_controller_time(ev, AGENTS), args.repeat)),
        ("stage_clocks, 2 agents", best(lambda: stage_clocks(moved, stages), args.repeat)),
        (
            "to_controller_time, one clock",
            best(lambda: to_controller_time(one, {"local": AGENTS["local"]}), args.repeat),
        ),
        ("stage_clocks, one clock", best(lambda: stage_clocks(one_moved, stages), args.repeat)),
        ("timeline_of (for scale)", best(lambda: timeline_of(moved, stages), args.repeat)),
    ]
    for name, s in rows:
        print(f"{name:32s} {s:7.3f} s   {100 * s / read_s:6.1f}% of reading")
    sub = moved.filter(pl.col("stage") == "submit")
    assert int(sub["clock_offset_ns"].abs().max()) == 0  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
