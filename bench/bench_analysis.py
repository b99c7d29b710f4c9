"""Benchmark: analysis of a 1,000,000-job trial (8-stage EDGI chain) from its event log,
CSV (events.csv) against the columnar log (events.arrows), side by side in one run.

Generates one synthetic trial (~10 million events per million jobs: the 8 chain stages
plus the client's ``intended`` and ``submit_ack`` stamps, some failures and a
finishing-stage bottleneck) and writes the same events twice: as events.csv and as an
Arrow IPC stream of 4,096-event batches (what ``ArrowEventLog`` writes). Then times, each
in a fresh subprocess so that peak RSS is the step's own, for each format:

1. the floor: polars alone reading the log for one group-by (stage -> count, last t_ns):
   ``scan_csv`` (streaming engine) for CSV, ``read_ipc_stream`` of the two columns for Arrow;
2. ``read``: gridbench's reader of the log (torn tail and foreign-input checks included);
3. ``full``: ``analyze_run(write=True)``: events to metrics.json and series.json.

Targets (issue 26): analysis of 1 M jobs <= 2 s and <= 1 GiB; 10 M jobs <= 25 s and
<= 4 GiB; full / floor <= 2. ``--formats arrow`` skips CSV (a 10 M-job CSV does not fit).

    .venv/bin/python bench/bench_analysis.py [--jobs 1000000] [--formats csv,arrow] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gridbench.jobflow.events.columnar import ArrowEventLog

STAGES = [
    ("submit", "client", 1_000),
    ("ce_entry", "ce", 1_000_000_000),
    ("ce_submit", "ce", 1_000_000_000),
    ("bridge_entry", "bridge", 1_000_000_000),
    ("bridge_submit", "bridge", 1_000_000_000),
    ("bridge_done", "bridge", 1_000_000_000),
    ("ce_done", "ce", 1_000_000_000),
    ("client_done", "client", 1_000),
]
SEGMENTS = [
    ("ce_prep", "ce_entry", "ce_submit"),
    ("bridge_prep", "bridge_entry", "bridge_submit"),
    ("dg", "bridge_submit", "bridge_done"),
    ("ce_finish", "bridge_done", "ce_done"),
]


def _fifo(arrivals: np.ndarray, service_ns: int) -> np.ndarray:
    """Departures of a FIFO single server: d_n = max(a_n, d_{n-1}) + s, vectorised."""
    order = np.argsort(arrivals, kind="stable")
    a = arrivals[order]
    k = np.arange(a.size, dtype=np.int64)
    d = service_ns * (k + 1) + np.maximum.accumulate(a - service_ns * k)
    out = np.empty_like(d)
    out[order] = d
    return out


def generate(run: Path, n: int, rate: float = 1000.0, seed: int = 1) -> int:
    """Write a one-trial run with ``n`` jobs at ``rate``/s; return the number of events."""
    rng = np.random.default_rng(seed)
    t0 = 1_700_000_000_000_000_000
    ms, s = 1_000_000, 1_000_000_000
    intended = t0 + (np.arange(n) * (1e9 / rate)).astype(np.int64)
    t = {"intended": intended}
    t["submit"] = intended + rng.integers(0, 2 * ms, n)
    t["submit_ack"] = t["submit"] + rng.integers(1 * ms, 5 * ms, n)
    t["ce_entry"] = t["submit"] + rng.integers(1 * ms, 3 * ms, n)
    t["ce_submit"] = t["ce_entry"] + rng.integers(100 * ms, 400 * ms, n)
    t["bridge_entry"] = t["ce_submit"] + rng.integers(1 * ms, 5 * ms, n)
    t["bridge_submit"] = t["bridge_entry"] + rng.integers(500 * ms, 2 * s, n)
    t["bridge_done"] = t["bridge_submit"] + rng.integers(5 * s, 10 * s, n)
    t["ce_done"] = _fifo(t["bridge_done"], int(1e9 / (0.9 * rate)))  # the bottleneck
    t["client_done"] = t["ce_done"] + rng.integers(100 * ms, 1 * s, n)
    jobs = "j" + pl.Series("job", np.arange(n)).cast(pl.String).str.zfill(7)
    failed = rng.random(n) < 0.005  # job_failed in the desktop grid: no later stamps
    frames = []
    prec = {"intended": ("client", 1_000), "submit_ack": ("client", 1_000)}
    prec.update({name: (src, p) for name, src, p in STAGES})
    late_stages = {"ce_done", "client_done"}
    for name, arr in t.items():
        keep = ~failed if name in late_stages else np.ones(n, dtype=bool)
        src, p = prec[name]
        m = int(keep.sum())
        attrs = '{"backend_id":"ce-1"}' if name == "submit_ack" else ""
        frames.append(
            pl.DataFrame(
                {
                    "job": jobs.filter(pl.Series(keep)),
                    "stage": pl.repeat(name, m, eager=True),
                    "t_ns": arr[keep],
                    "source": pl.repeat(src, m, eager=True),
                    "precision_ns": pl.repeat(p, m, eager=True, dtype=pl.Int64),
                    "agent": pl.repeat("local", m, eager=True),
                    "clock_offset_ns": pl.repeat(0, m, eager=True, dtype=pl.Int64),
                    "attrs": pl.repeat(attrs, m, eager=True),
                }
            )
        )
    m = int(failed.sum())
    frames.append(
        pl.DataFrame(
            {
                "job": jobs.filter(pl.Series(failed)),
                "stage": pl.repeat("failed", m, eager=True),
                "t_ns": t["bridge_done"][failed],
                "source": pl.repeat("client", m, eager=True),
                "precision_ns": pl.repeat(1_000, m, eager=True, dtype=pl.Int64),
                "agent": pl.repeat("local", m, eager=True),
                "clock_offset_ns": pl.repeat(0, m, eager=True, dtype=pl.Int64),
                "attrs": pl.repeat('{"kind":"job_failed"}', m, eager=True),
            }
        )
    )
    events = pl.concat(frames).sort("t_ns")  # an append-only log is roughly time-ordered
    tdir = run / "trials" / "p00-t00"
    tdir.mkdir(parents=True)
    events.write_csv(tdir / "events.csv")
    arrow_dir = run.parent / "run-arrow" / "trials" / "p00-t00"
    arrow_dir.mkdir(parents=True)
    with ArrowEventLog(arrow_dir / "events.arrows") as log:
        for part in events.iter_slices(4096):  # the batches a live ArrowEventLog writes
            log.write_frame(part)
    end = int(t["client_done"].max())
    info = {
        "trial_id": "p00-t00",
        "point_index": 0,
        "trial_index": 0,
        "point": {"rate": rate},
        "load_model": "open",
        "offered_rate_per_s": rate,
        "planned_jobs": n,
        "started_ns": t0,
        "submit_end_ns": int(intended[-1]),
        "ended_ns": end,
        "status": "complete",
        "chain": {
            "stages": [
                {"name": a, "source": b, "label": "", "precision_ns": c} for a, b, c in STAGES
            ],
            "segments": [
                {"name": a, "start": b, "end": c, "component": True} for a, b, c in SEGMENTS
            ],
        },
        "agents": {"local": {"clock_offset_ns": 0, "clock_uncertainty_ns": 0}},
        "background_queue": {"start": 0, "end": 0},
        "cpu_count": 2,
        "late_threshold_ns": 100_000_000,
    }
    (tdir / "trial.json").write_text(json.dumps(info))
    ts = np.arange(t0, end, 1_000_000_000, dtype=np.int64)
    pl.DataFrame(
        {
            "t_ns": ts,
            "cpu_percent": rng.uniform(20, 40, ts.size),
            "rss_bytes": np.full(ts.size, 200_000_000),
            "children": np.zeros(ts.size, dtype=np.int64),
        }
    ).write_csv(tdir / "resources.csv")
    (run / "experiment.json").write_text(json.dumps({"name": "bench-1m", "status": "complete"}))
    for name in ("trial.json", "resources.csv"):
        shutil.copy(tdir / name, arrow_dir / name)
    shutil.copy(run / "experiment.json", arrow_dir.parents[1] / "experiment.json")
    return events.height


CHILD = r"""
import json, sys, time
from pathlib import Path
mode, fmt, run = sys.argv[1], sys.argv[2], Path(sys.argv[3])
t = time.perf_counter()
import polars as pl
from gridbench.jobflow.events.trial_log import read_trial_log
if mode == "full":
    from gridbench.jobflow.analysis import analyze_run
imported = time.perf_counter() - t
tdir = run / "trials" / "p00-t00"
t = time.perf_counter()
if mode == "floor" and fmt == "csv":
    df = (
        pl.scan_csv(tdir / "events.csv", schema_overrides={"t_ns": pl.Int64})
        .group_by("stage").agg(pl.len(), pl.col("t_ns").max()).collect(engine="streaming")
    )
    extra = {"rows": int(df["len"].sum())}
elif mode == "floor":
    df = pl.read_ipc_stream(tdir / "events.arrows", columns=["stage", "t_ns"])
    df = df.group_by("stage").agg(pl.len(), pl.col("t_ns").max())
    extra = {"rows": int(df["len"].sum())}
elif mode == "read":
    extra = {"rows": read_trial_log(tdir).height}
else:
    m = analyze_run(run, write=True)
    extra = {"statement": m["bottleneck"]["statement"], "valid": m["validity"]["valid"]}
wall = time.perf_counter() - t
# VmHWM, not ru_maxrss: ru_maxrss survives exec, so it would report the bench's own peak
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
rss = int(hwm.split()[1]) * 1024
print(json.dumps({"seconds": wall, "import_seconds": imported, "peak_rss_bytes": rss, **extra}))
"""


def run_child(mode: str, fmt: str, run: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, fmt, str(run)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def best(mode: str, fmt: str, run: Path, repeat: int) -> dict[str, Any]:
    runs = [run_child(mode, fmt, run) for _ in range(repeat)]
    top = min(runs, key=lambda r: float(r["seconds"]))
    top["all"] = [round(float(r["seconds"]), 2) for r in runs]
    return top


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each step (best kept)")
    ap.add_argument("--formats", default="csv,arrow", help="csv, arrow or both (default)")
    ap.add_argument("--keep", type=Path, help="generate into this directory and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="gridbench-bench-"))
    runs = {"csv": base / "run", "arrow": base / "run-arrow"}
    try:
        for r in runs.values():
            if r.exists():
                shutil.rmtree(r)
        t = time.perf_counter()
        n_events = generate(runs["csv"], args.jobs)
        sizes = {
            "csv": (runs["csv"] / "trials" / "p00-t00" / "events.csv").stat().st_size,
            "arrow": (runs["arrow"] / "trials" / "p00-t00" / "events.arrows").stat().st_size,
        }
        print(
            f"generated {args.jobs:,} jobs, {n_events:,} events: CSV {sizes['csv'] / 1e6:.0f} MB, "
            f"Arrow {sizes['arrow'] / 1e6:.0f} MB, in {time.perf_counter() - t:.1f} s"
        )
        formats = [f for f in args.formats.split(",") if f]
        if "csv" not in formats:
            (runs["csv"] / "trials" / "p00-t00" / "events.csv").unlink()
        gib = 2**30
        print(f"best of {args.repeat}, each step in a fresh process")
        print(
            f"{'format':<7}{'step':<8}{'seconds':>9}{'peak RSS GiB':>14}{'x floor':>9}   runs (s)"
        )
        for fmt in formats:
            floor = best("floor", fmt, runs[fmt], args.repeat)
            for mode in ("floor", "read", "full"):
                r = floor if mode == "floor" else best(mode, fmt, runs[fmt], args.repeat)
                secs, rss = float(r["seconds"]), int(r["peak_rss_bytes"]) / gib
                ratio = secs / float(floor["seconds"])
                print(f"{fmt:<7}{mode:<8}{secs:>9.2f}{rss:>14.2f}{ratio:>9.2f}   {r['all']}")
                if mode == "full":
                    print(f"  finding: {r['statement']}")
        print(
            "targets: full <= 2 s and <= 1 GiB at 1 M jobs; <= 25 s, <= 4 GiB at 10 M; "
            "full / floor <= 2"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
