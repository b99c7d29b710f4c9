"""What it costs gridbench to run one short client program (sbatch, qstat, ...).

``cli_run.run_cli`` spawns with posix_spawn and watches a pidfd on the event loop; the
fallback (and the path before) is asyncio's subprocess. Both run ``/bin/true`` N times
with K in flight, in alternating rounds, against K shell loops doing the same, and the
harness's own CPU per call is read from getrusage (children excluded).

    .venv/bin/python bench/bench_spawn.py [--calls 2000] [--concurrency 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable

from gridbench.jobflow.backends import cli_run, spawn

# the environment a backend passes: the harness's own plus a few settings
ENV = {**os.environ, "SLURM_CONF": "/etc/slurm/slurm.conf", "MUNGE_SOCKET": "/run/munge"}


def _self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _harness(calls: int, k: int, fast: bool) -> tuple[float, float]:
    """(calls per second, harness CPU ms per call) through run_cli."""
    real = spawn.available
    if not fast:
        spawn.available = lambda: False  # type: ignore[assignment]

    async def main() -> None:
        sem = asyncio.Semaphore(k)

        async def one() -> None:
            async with sem:
                r = await cli_run.run_cli(["/bin/true"], ENV, 30)
                assert r.rc == 0

        await asyncio.gather(*(one() for _ in range(calls)))

    try:
        c0, t0 = _self_cpu(), time.perf_counter()
        asyncio.run(main())
        wall, cpu = time.perf_counter() - t0, _self_cpu() - c0
    finally:
        spawn.available = real  # type: ignore[method-assign]
    return calls / wall, cpu / calls * 1e3


def _shell(calls: int, k: int) -> tuple[float, float]:
    per = calls // k
    loop = f"for i in $(seq {per}); do /bin/true; done"
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["bash", "-c", loop]) for _ in range(k)]
    for p in procs:
        p.wait()
    return per * k / (time.perf_counter() - t0), float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not spawn.available():
        raise SystemExit("posix_spawn/pidfd_open are not usable here (Linux 5.3+ needed)")
    ways: dict[str, Callable[[], tuple[float, float]]] = {
        "shell loops (baseline)": lambda: _shell(a.calls, a.concurrency),
        "run_cli: posix_spawn + pidfd": lambda: _harness(a.calls, a.concurrency, True),
        "run_cli: asyncio subprocess": lambda: _harness(a.calls, a.concurrency, False),
    }
    got: dict[str, list[tuple[float, float]]] = {w: [] for w in ways}
    for _ in range(a.rounds):
        for name, way in ways.items():
            got[name].append(way())
    med = statistics.median
    print(f"/bin/true x {a.calls}, {a.concurrency} in flight, {a.rounds} rounds (medians):")
    fast_cpu = med(c for _, c in got["run_cli: posix_spawn + pidfd"])
    for name, rows in got.items():
        rate, cpu = med(r for r, _ in rows), med(c for _, c in rows)
        extra = "" if cpu != cpu else f", harness CPU {cpu:.2f} ms per call"
        if cpu == cpu and name.endswith("subprocess"):
            extra += f" ({cpu / fast_cpu:.1f}x the posix_spawn path)"
        print(f"  {name:32s} {rate:7.0f} calls/s{extra}")


if __name__ == "__main__":
    main()
