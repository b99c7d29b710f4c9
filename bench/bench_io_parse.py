"""Benchmark: the harness's own cost of parsing a 1-hour fio run with latency logs.

Generates a synthetic one-hour run: fio's JSON+ output for the iozone matrix (9 tests ×
3 repetitions, each with a full latency histogram of ~1,500 bins) and a per-I/O latency
log of one hour at --iops I/Os per second (7.2 million lines at the default 2,000),
in fio's ``write_lat_log`` format. Then times, in this process:

1. baseline: reading the latency log line by line with Python's csv module (what a
   naive harness would do) and sorting the values for percentiles;
2. gridbench: ``read_lat_log`` + ``summarise`` (polars, columnar) on the same file;
3. gridbench: ``parse_fio_text`` of every JSON+ document, and the matrix analysis.

Target: seconds, not minutes. Run:

    .venv/bin/python bench/bench_io_parse.py [--iops 2000] [--seconds 3600]
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gridbench.io.analysis import matrix
from gridbench.io.latlog import read_lat_log, summarise
from gridbench.io.model import IOZONE_TESTS
from gridbench.io.parse import parse_fio_text, row_of

TESTS = list(IOZONE_TESTS)


def make_lat_log(path: Path, seconds: int, iops: int, rng: np.random.Generator) -> int:
    n = seconds * iops
    msec = np.sort(rng.integers(0, seconds * 1000, n))
    ns = rng.lognormal(np.log(200_000), 0.8, n).astype(np.int64)
    ddir = rng.integers(0, 2, n)
    pl.DataFrame(
        {
            "msec": msec,
            "ns": ns,
            "ddir": ddir,
            "bs": np.full(n, 131072),
            "offset": rng.integers(0, 2**31, n),
        }
    ).write_csv(path, include_header=False, separator=",")
    # fio writes ", " between fields
    path.write_bytes(path.read_bytes().replace(b",", b", "))
    return n


def make_json_plus(rng: np.random.Generator, ios: int) -> str:
    # fio's JSON+ bins: ~1,500 distinct latency buckets per direction
    vals = np.unique(rng.lognormal(np.log(200_000), 0.8, 1500).astype(np.int64))
    counts = rng.multinomial(ios, np.full(vals.size, 1 / vals.size))
    bins = {str(int(v)): int(c) for v, c in zip(vals, counts, strict=True) if c}
    lat = {
        "min": int(vals[0]),
        "max": int(vals[-1]),
        "mean": float(vals.mean()),
        "N": ios,
        "percentile": {"50.000000": int(np.median(vals)), "99.000000": int(vals[-15])},
        "bins": bins,
    }
    d = {
        "io_bytes": ios * 131072,
        "bw_bytes": 500_000_000,
        "bw": 488281,
        "iops": 3800.0,
        "runtime": 3600_000,
        "lat_ns": lat,
        "clat_ns": lat,
    }
    doc = {
        "fio version": "fio-3.33",
        "jobs": [
            {
                "jobname": "j",
                "error": 0,
                "read": d,
                "write": {"io_bytes": 0},
                "usr_cpu": 1.0,
                "sys_cpu": 2.0,
            }
        ],
    }
    return json.dumps(doc, indent=2)


def baseline_csv(path: Path) -> float:
    vals = []
    with path.open() as fh:
        for row in csv.reader(fh):
            vals.append(int(row[1]))
    vals.sort()
    return vals[int(0.99 * len(vals))] / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iops", type=int, default=2000)
    ap.add_argument("--seconds", type=int, default=3600)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as td:
        log = Path(td) / "run_lat.1.log"
        t0 = time.perf_counter()
        n = make_lat_log(log, args.seconds, args.iops, rng)
        gen = time.perf_counter() - t0
        docs = [make_json_plus(rng, 1_000_000) for _ in range(len(TESTS) * 3)]
        size_mb = log.stat().st_size / 2**20
        print(
            f"synthetic 1-hour run: {n:,} latency-log lines ({size_mb:.0f} MiB, generated "
            f"in {gen:.1f} s), "
            f"{len(docs)} JSON+ documents ({sum(map(len, docs)) / 2**20:.1f} MiB)"
        )

        t0 = time.perf_counter()
        p99_base = baseline_csv(log)
        t_base = time.perf_counter() - t0
        print(
            f"baseline  csv module + sort (p99 only):        {t_base:7.2f} s   p99 "
            f"{p99_base:.3f} ms"
        )

        t0 = time.perf_counter()
        s: dict[str, Any] = summarise(read_lat_log(log))
        t_lat = time.perf_counter() - t0
        p99 = max(v["p99"] for v in s.values())
        secs = len(next(iter(s.values()))["per_second"]["second"])
        print(
            f"gridbench read_lat_log + summarise (all stats, {secs} s series): {t_lat:7.2f} "
            f"s   p99 {p99:.3f} ms "
            f"({t_base / t_lat:.1f}x faster than baseline)"
        )

        t0 = time.perf_counter()
        rows = []
        for i, doc in enumerate(docs):
            for r in parse_fio_text(doc, "bench"):
                rows.append(
                    row_of(
                        r,
                        kind="iozone",
                        target="t",
                        test=TESTS[i % len(TESTS)],
                        rep=i // len(TESTS),
                    )
                )
        entries = matrix(rows, None)
        t_json = time.perf_counter() - t0
        print(
            f"gridbench parse {len(docs)} JSON+ docs + matrix ({len(entries)} cells):   "
            f"{t_json:7.2f} s"
        )
        total = t_lat + t_json
        print(
            f"total parsing cost of the 1-hour run: {total:.2f} s  "
            f"({'OK: seconds' if total < 60 else 'TOO SLOW'})"
        )


if __name__ == "__main__":
    main()
