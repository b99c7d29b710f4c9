"""Benchmark: analysis of a 1,000,000-job trial (8-stage EDGI chain) from its event log,
CSV (events.csv) against the columnar log (events.arrows), side by side in one run.

Generates one synthetic trial (~10 million events per million jobs: the 8 chain stages
plus the client's ``intended`` and ``submit_ack`` stamps, some failures and a
finishing-stage bottleneck) and writes the same events twice: as events.csv and as an
Arrow IPC stream of 4,096-event batches (what ``ArrowEventLog`` writes). Then times, each
in a fresh subprocess so that peak RSS is the step's own, for each format:

1. the floor: polars alone reading the log for one group-by (stage -> count, last t_ns):
   ``scan_csv`` (streaming engine) for CSV, ``read_ipc_stream`` of the two columns for Arrow;
2. ``jobs``: polars alone, the per-job pivot (group-by job, earliest time per stage): the
   floor of what the analysis must compute from the events;
3. ``read``: gridbench's reader materialising every event (up to 2 M jobs: beyond, it
   does not fit);
4. ``full``: ``analyze_run(write=True)``: events to metrics.json and series.json;
5. ``page``: the results page of that run from a copy without its event log (it must
   come from metrics.json and series.json): the view built cold, then the page through
   FastAPI's TestClient, first and warm (target < 200 ms at 10 M jobs).

``--baseline SRC`` adds ``before``: the full analysis with another source tree (e.g. the
main branch) on the same log in the same run. ``--keep DIR`` keeps the generated logs
and reuses them (a 10 M-job Arrow log, 5.5 GB, takes ~3 min to write).

Targets (issue 26): analysis of 1 M jobs <= 2 s and <= 1 GiB; 10 M jobs <= 25 s and
<= 4 GiB; full / floor <= 2. ``--formats arrow`` skips CSV. ``--batch N``: events per Arrow
batch (a live log's batch is what 0.1 s brought; smaller batches cost more to read).

    .venv/bin/python bench/bench_analysis.py [--jobs 1000000] [--formats csv,arrow]
        [--keep DIR] [--baseline /work/main/src] [--repeat 3] [--batch 4096] [--foreign-ids]
"""

from __future__ import annotations

import argparse
import json
import os
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
from gridbench.jobflow.events.job_numbers import job_name_expr, job_prefix

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


def _times(n: int, rate: float, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per stage each job's time (ns), and which jobs failed in the desktop grid."""
    rng = np.random.default_rng(seed)
    ms, s = 1_000_000, 1_000_000_000
    intended = T0 + (np.arange(n) * (1e9 / rate)).astype(np.int64)
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
    return t, rng.random(n) < 0.005  # job_failed in the desktop grid: no later stamps


T0 = 1_700_000_000_000_000_000
#: jobs per generated slice: each slice's events are sorted and written in turn, so a
#: 10 M-job log (100 M events) is never in memory at once
SLICE_JOBS = 500_000


def _events(
    t: dict[str, np.ndarray], failed: np.ndarray, lo: int, hi: int, *, foreign: bool = False
) -> pl.DataFrame:
    """The events of jobs ``lo``..``hi`` sorted by time (an append-only log is roughly
    time-ordered; slices overlap in time, as a live log's late stamps do). Jobs are named
    as gridbench names them (``p00-t00-000042``), or ``foreign``: ``j00000042``, ids the
    analysis cannot number (an ingested log's)."""
    n = hi - lo
    numbers = pl.Series("job", np.arange(lo, hi))
    if foreign:
        jobs = "j" + numbers.cast(pl.String).str.zfill(8)
    else:
        jobs = pl.select(job_name_expr(job_prefix("p00-t00"), pl.lit(numbers)).alias("job"))["job"]
    fail = failed[lo:hi]
    prec = {"intended": ("client", 1_000), "submit_ack": ("client", 1_000)}
    prec.update({name: (src, p) for name, src, p in STAGES})
    frames = []

    def frame(keep: np.ndarray, name: str, arr: np.ndarray, src: str, p: int, attrs: str) -> None:
        m = int(keep.sum())
        frames.append(
            pl.DataFrame(
                {
                    "job": jobs.filter(pl.Series(keep)),
                    "stage": pl.repeat(name, m, eager=True),
                    "t_ns": arr[lo:hi][keep],
                    "source": pl.repeat(src, m, eager=True),
                    "precision_ns": pl.repeat(p, m, eager=True, dtype=pl.Int64),
                    "agent": pl.repeat("local", m, eager=True),
                    "clock_offset_ns": pl.repeat(0, m, eager=True, dtype=pl.Int64),
                    "attrs": pl.repeat(attrs, m, eager=True),
                }
            )
        )

    for name, arr in t.items():
        keep = ~fail if name in ("ce_done", "client_done") else np.ones(n, dtype=bool)
        src, p = prec[name]
        frame(keep, name, arr, src, p, '{"backend_id":"ce-1"}' if name == "submit_ack" else "")
    frame(fail, "failed", t["bridge_done"], "client", 1_000, '{"kind":"job_failed"}')
    return pl.concat(frames).sort("t_ns")


def generate(
    base: Path,
    n: int,
    formats: list[str],
    rate: float = 1000.0,
    seed: int = 1,
    batch: int = 4096,
    foreign: bool = False,
) -> int:
    """Write the one-trial run with ``n`` jobs at ``rate``/s in each format of ``formats``
    (``base/run`` CSV, ``base/run-arrow`` Arrow), slice by slice; return the events."""
    t, failed = _times(n, rate, seed)
    dirs = {f: base / RUNS[f] / "trials" / "p00-t00" for f in formats}
    for d in dirs.values():
        d.mkdir(parents=True)
    count = 0
    arrow = ArrowEventLog(dirs["arrow"] / "events.arrows") if "arrow" in dirs else None
    csv = open(dirs["csv"] / "events.csv", "wb") if "csv" in dirs else None  # noqa: SIM115
    try:
        for lo in range(0, n, SLICE_JOBS):
            events = _events(t, failed, lo, min(n, lo + SLICE_JOBS), foreign=foreign)
            count += events.height
            if csv is not None:
                events.write_csv(csv, include_header=lo == 0)
            if arrow is not None:
                for part in events.iter_slices(batch):  # the batches a live ArrowEventLog writes
                    arrow.write_frame(part)
    finally:
        if arrow is not None:
            arrow.close()
        if csv is not None:
            csv.close()
    end = int(t["client_done"].max())
    info = {
        "trial_id": "p00-t00",
        "point_index": 0,
        "trial_index": 0,
        "point": {"rate": rate},
        "load_model": "open",
        "offered_rate_per_s": rate,
        "planned_jobs": n,
        "started_ns": T0,
        "submit_end_ns": int(t["intended"][-1]),
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
    ts = np.arange(T0, end, 1_000_000_000, dtype=np.int64)
    rng = np.random.default_rng(seed + 1)
    resources = pl.DataFrame(
        {
            "t_ns": ts,
            "cpu_percent": rng.uniform(20, 40, ts.size),
            "rss_bytes": np.full(ts.size, 200_000_000),
            "children": np.zeros(ts.size, dtype=np.int64),
        }
    )
    for d in dirs.values():
        (d / "trial.json").write_text(json.dumps(info))
        resources.write_csv(d / "resources.csv")
        (d.parents[1] / "experiment.json").write_text(
            json.dumps({"name": f"bench-{n}", "status": "complete"})
        )
    return count


RUNS = {"csv": "run", "arrow": "run-arrow"}


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
elif mode == "jobs":  # the per-job pivot alone, polars reading the log
    src = pl.scan_csv(tdir / "events.csv", schema_overrides={"t_ns": pl.Int64}) if fmt == "csv" \
        else pl.read_ipc_stream(tdir / "events.arrows", columns=["job", "stage", "t_ns"]).lazy()
    stages = json.loads((tdir / "trial.json").read_text())["chain"]["stages"]
    names = ["intended", "submit_ack"] + [s["name"] for s in stages]
    df = src.group_by("job").agg(
        pl.col("t_ns").filter(pl.col("stage") == s).min().alias(s) for s in names
    ).collect(engine="streaming")
    extra = {"rows": df.height}
elif mode == "page":  # the results page from stored metrics: the run without its events
    import shutil, tempfile
    from fastapi.testclient import TestClient
    from gridbench.web.app import create_app
    from gridbench.web.dashboard import WebConfig
    from gridbench.web.results import build_view
    root = Path(tempfile.mkdtemp(prefix="gridbench-page-")) / "results"
    shutil.copytree(run, root / "bench", ignore=shutil.ignore_patterns("events*"))
    t = time.perf_counter()
    build_view(root / "bench", root.parent / "cache")  # cold: metrics.json and series.json
    cold = time.perf_counter() - t
    with TestClient(create_app(WebConfig(root)), base_url="http://127.0.0.1") as c:
        t = time.perf_counter()
        r = c.get("/experiments/bench")
        first = time.perf_counter() - t
        r.raise_for_status()
        t = time.perf_counter()
        c.get("/experiments/bench").raise_for_status()
        warm = time.perf_counter() - t
    shutil.rmtree(root.parent)
    extra = {"cold_view_s": cold, "first_page_s": first, "warm_page_s": warm,
             "page_bytes": len(r.content), "statement": ""}
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


def run_child(mode: str, fmt: str, run: Path, src: str | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:  # the same step with another source tree (the code before)
        env["PYTHONPATH"] = src
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, fmt, str(run)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def best(mode: str, fmt: str, run: Path, repeat: int, src: str | None = None) -> dict[str, Any]:
    runs = [run_child(mode, fmt, run, src) for _ in range(repeat)]
    top = min(runs, key=lambda r: float(r["seconds"]))
    top["all"] = [round(float(r["seconds"]), 2) for r in runs]
    return top


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each step (best kept)")
    ap.add_argument("--formats", default="csv,arrow", help="csv, arrow or both (default)")
    ap.add_argument(
        "--batch",
        type=int,
        default=4096,
        help="events per Arrow batch (default 4096: a writer at ~4,000 events/s and more; "
        "a live log holds one batch per 0.1 s, so 100 jobs/s of 10 stamps is ~100)",
    )
    ap.add_argument(
        "--keep", type=Path, help="generate into this directory and keep it (reused if there)"
    )
    ap.add_argument(
        "--baseline",
        help="another source tree (e.g. /work/main/src) whose full analysis runs in the same "
        "run, for the figures before a change (skipped past 2 M jobs: it does not fit)",
    )
    ap.add_argument(
        "--foreign-ids",
        action="store_true",
        help="name jobs j00000042 rather than gridbench's p00-t00-000042: ids the analysis "
        "cannot number, so its per-job table takes the hash-keyed path (an ingested log's)",
    )
    args = ap.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    base = args.keep or Path(tempfile.mkdtemp(prefix="gridbench-bench-"))
    runs = {f: base / RUNS[f] for f in formats}
    logs = {"csv": "events.csv", "arrow": "events.arrows"}
    try:
        tag = ("" if args.batch == 4096 else f"-b{args.batch}") + ("-foreign" * args.foreign_ids)
        stamp = base / f"generated-{args.jobs}{tag}"
        if not stamp.exists():
            for r in runs.values():
                shutil.rmtree(r, ignore_errors=True)
            for other in base.glob("generated-*"):  # what was kept is replaced
                other.unlink()
            t = time.perf_counter()
            stamp.write_text(
                str(generate(base, args.jobs, formats, batch=args.batch, foreign=args.foreign_ids))
            )
            print(f"generated in {time.perf_counter() - t:.1f} s")
        sizes = {f: (runs[f] / "trials" / "p00-t00" / logs[f]).stat().st_size for f in formats}
        print(
            f"{args.jobs:,} jobs, {int(stamp.read_text()):,} events: "
            + ", ".join(f"{f} {sizes[f] / 1e6:,.0f} MB" for f in formats)
        )
        gib = 2**30
        small = args.jobs <= 2_000_000  # materialising every event fits
        print(f"best of {args.repeat}, each step in a fresh process")
        print(
            f"{'format':<7}{'step':<10}{'seconds':>9}{'peak RSS GiB':>14}{'x floor':>9}   runs (s)"
        )
        for fmt in formats:
            floor = best("floor", fmt, runs[fmt], args.repeat)
            steps = ["floor", "jobs"] + (["read"] if small else []) + ["full", "page"]
            if args.baseline and small:
                steps.append("before")
            for mode in steps:
                if mode == "floor":
                    r = floor
                elif mode == "before":
                    r = best("full", fmt, runs[fmt], args.repeat, args.baseline)
                else:
                    r = best(mode, fmt, runs[fmt], args.repeat)
                secs, rss = float(r["seconds"]), int(r["peak_rss_bytes"]) / gib
                ratio = secs / float(floor["seconds"])
                print(f"{fmt:<7}{mode:<10}{secs:>9.2f}{rss:>14.2f}{ratio:>9.2f}   {r['all']}")
                if mode == "full":
                    print(f"  finding: {r['statement']}")
                if mode == "page":  # ``seconds`` there is the whole step
                    print(
                        f"  results page without the events: view built cold "
                        f"{r['cold_view_s'] * 1e3:.0f} ms; page in-process (TestClient) first "
                        f"{r['first_page_s'] * 1e3:.0f} ms, warm {r['warm_page_s'] * 1e3:.0f} ms, "
                        f"{r['page_bytes'] / 1e3:.0f} kB"
                    )
        print(
            "floor: polars alone, one group-by by stage; jobs: polars alone, the per-job "
            "pivot (group-by job, min time per stage); before: --baseline's full analysis"
        )
        print(
            "targets: full <= 2 s and <= 1 GiB at 1 M jobs; <= 25 s, <= 4 GiB at 10 M; "
            "full / floor <= 2"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
