"""Benchmark: the resilience phase's integrity check against ``sha256sum`` over the same
files, in the same run.

Writes ``--files`` files of ``--size`` random bytes into ``--dir`` (default: a fresh
temporary directory; give a mount point to include the file system's read path), then
times, ``--rounds`` times in alternating order:

1. baseline: ``sha256sum FILE...`` (coreutils, one process, one file after another);
2. gridbench: ``gridbench.io.integrity.verify`` with 1 reader and with ``--threads``
   readers (hashlib's sha256, the digest compared with the one taken at write time).

With ``--cold`` the page cache is dropped before every measurement (root), so both read
from the storage; without it both hash files from the page cache and the figure is the
hashing. Prints the median MiB/s of each and the ratio gridbench / sha256sum. Target:
at least 0.8. Run:

    .venv/bin/python bench/bench_integrity.py [--files 64] [--size 8M] [--dir D] [--cold]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gridbench.io import cache
from gridbench.io.integrity import Written, verify
from gridbench.units import parse_size


def make_files(d: Path, n: int, size: int) -> list[Written]:
    out = []
    for i in range(n):
        data = os.urandom(size)
        p = d / f"bench-{i:04d}.dat"
        p.write_bytes(data)
        out.append(Written(p, size, hashlib.sha256(data).hexdigest()))
    return out


def sha256sum(files: list[Written]) -> None:
    done = subprocess.run(
        ["sha256sum", *[str(w.path) for w in files]], capture_output=True, check=True
    )
    want = {w.path.name: w.sha256 for w in files}
    for line in done.stdout.decode().splitlines():  # the baseline must be right too
        digest, name = line.split(maxsplit=1)
        assert want[Path(name.lstrip("*")).name] == digest


def timed(fn: Callable[[], object], cold: bool) -> float:
    if cold and not cache.drop_caches():
        raise SystemExit("--cold needs root (to drop the page cache)")
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--size", default="8M")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--cold", action="store_true")
    a = ap.parse_args()
    size = parse_size(a.size)
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        files = make_files(Path(tmp), a.files, size)
        total_mib = a.files * size / 2**20

        def ours(k: int) -> Callable[[], object]:
            def run() -> object:
                r = verify(files, k)
                assert r["ok"], r["bad"]
                return r

            return run

        ways: dict[str, Callable[[], object]] = {
            "sha256sum": lambda: sha256sum(files),
            "gridbench, 1 reader": ours(1),
            f"gridbench, {a.threads} readers": ours(a.threads),
        }
        times: dict[str, list[float]] = {k: [] for k in ways}
        for r in range(a.rounds):
            order = list(ways) if r % 2 == 0 else list(reversed(ways))
            for k in order:
                times[k].append(timed(ways[k], a.cold))
    mode = "cold (page cache dropped)" if a.cold else "warm (page cache)"
    where = a.dir or "a temporary directory"
    print(
        f"{a.files} files x {a.size} = {total_mib:.0f} MiB in {where}, {mode}, "
        f"{a.rounds} rounds, median:"
    )
    base = total_mib / statistics.median(times["sha256sum"])
    for k, ts in times.items():
        rate = total_mib / statistics.median(ts)
        print(f"  {k:<24} {rate:8.0f} MiB/s   {rate / base:5.2f}x sha256sum")


if __name__ == "__main__":
    main()
