"""gridbench against a live Slurm (started here on loopback, as root): harness cost.

1. Submission throughput through ``sbatch``: gridbench's batch model with K submitters
   against a plain shell loop of ``sbatch`` with the same concurrency (K parallel loops), in
   the same run, on the same cluster. Target: gridbench >= 90% of the shell loop.
2. Polling cost with many jobs queued: one status sweep = one ``squeue --json`` call, timed;
   and the controller's RPC counts (``sdiag``) over the same period with the tracker
   polling and without it.

    .venv/bin/python bench/bench_slurm.py [--jobs 400] [--concurrency 8] [--queued 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gridbench.backends.registry import create_backend
from gridbench.events.log import read_events
from gridbench.run.experiment import ExperimentRunner
from gridbench.spec import load_spec_text, make_plan
from slurm_cluster import SlurmCluster, running_cluster


def shell_loop_rate(c: SlurmCluster, jobs: int, k: int) -> float:
    """k parallel bash loops of sbatch: the baseline an operator would script."""
    per = jobs // k
    loop = (
        f"for i in $(seq {per}); do sbatch -Q --parsable -o /dev/null --wrap true >/dev/null; done"
    )
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["bash", "-c", loop], env={**_env(), **c.env}) for _ in range(k)]
    for p in procs:
        p.wait()
    return per * k / (time.perf_counter() - t0)


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def gridbench_rate(
    c: SlurmCluster,
    jobs: int,
    k: int,
    root: Path,
    status_interval: float = 1.0,
    extra: str = "",
    bulk: int = 1,
) -> float:
    spec, data = load_spec_text(
        f"""
name: bench-slurm-batch
backend: {{type: slurm, options: {{conf: "{c.conf}", max_concurrent_submits: {k},
           env: {{MUNGE_SOCKET: "{c.munge_socket}"}}{extra}}}}}
job: {{command: [/bin/true]}}
load: {{model: batch, jobs: {jobs}, submitters: {k}, bulk: {bulk}}}
timeouts: {{status_interval: {status_interval}s, drain: 300s}}
safety: {{max_jobs: 1000000, confirm_above: 1000000}}
"""
    )
    out = asyncio.run(ExperimentRunner(make_plan(spec, data), data, root).execute())
    ev = read_events(out.run.trial_dir("p00-t00") / "events.csv")
    sub = ev.filter(pl.col("stage") == "submit")["t_ns"]
    ack = ev.filter(pl.col("stage") == "submit_ack")["t_ns"]
    return ack.len() / ((ack.max() - sub.min()) / 1e9)  # type: ignore[operator]


def rpc_counts(c: SlurmCluster) -> dict[str, int]:
    out = c.run("sdiag")
    counts = {}
    for m in re.finditer(r"^\s*(REQUEST_\w+|MESSAGE_\w+)\s*\(\s*\d+\)\s*count:(\d+)", out, re.M):
        counts[m.group(1)] = int(m.group(2))
    return counts


def polling_cost(c: SlurmCluster, queued: int, seconds: float) -> None:
    c.run("scontrol", "update", "nodename=ALL", "state=drain", "reason=bench", check=False)
    loop = (
        f"for i in $(seq {queued}); do sbatch -Q --parsable -o /dev/null --wrap true "
        ">/dev/null; done"
    )
    subprocess.run(["bash", "-c", loop], env={**_env(), **c.env}, check=True)
    ids = c.job_ids()

    def backend(fmt: str) -> Any:
        return create_backend(
            "slurm",
            {
                "conf": str(c.conf),
                "env": {"MUNGE_SOCKET": str(c.munge_socket)},
                "squeue_format": fmt,
            },
        )

    async def sweeps(fmt: str, n: int, interval: float) -> tuple[list[float], float]:
        """Sweep times (wall) and the client CPU of the squeue children per sweep."""
        b = backend(fmt)
        await b.open()
        took = []
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            for _ in range(n):
                t0 = time.perf_counter()
                await b.status(ids)
                took.append(time.perf_counter() - t0)
                await asyncio.sleep(interval)
        finally:
            await b.close()
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
        return took, cpu / n

    n = int(seconds)
    base0 = rpc_counts(c)
    time.sleep(seconds)
    base1 = rpc_counts(c)
    took, cpu = asyncio.run(sweeps("json", n, 1.0))
    pol1 = rpc_counts(c)
    took_text, cpu_text = asyncio.run(sweeps("text", n, 1.0))
    idle = {k: base1.get(k, 0) - base0.get(k, 0) for k in base1}
    polled = {k: pol1.get(k, 0) - base1.get(k, 0) for k in pol1}
    med = statistics.median
    print(f"\npolling cost with {len(ids)} jobs queued ({n} sweeps, 1/s):")
    print(
        f"  squeue --json per sweep: median {med(took) * 1e3:.0f} ms, max {max(took) * 1e3:.0f}"
        f" ms, client CPU {cpu * 1e3:.0f} ms; backend calls per sweep: 1"
    )
    print(
        f"  squeue -O (text) per sweep: median {med(took_text) * 1e3:.0f} ms, max "
        f"{max(took_text) * 1e3:.0f} ms, client CPU {cpu_text * 1e3:.0f} ms "
        f"({med(took) / med(took_text):.1f}x faster than --json)"
    )
    keys = sorted(k for k in set(idle) | set(polled) if idle.get(k) or polled.get(k))
    print(f"  {'controller RPC':32s} {'idle ' + str(int(seconds)) + 's':>10s} {'polling':>10s}")
    for k in keys:
        print(f"  {k:32s} {idle.get(k, 0):>10d} {polled.get(k, 0):>10d}")
    c.run("scancel", "--state=PENDING", "-u", "root", check=False)


def _runs(xs: list[float]) -> str:
    return "(" + ", ".join(f"{x:.0f}" for x in xs) + ")"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--queued", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with running_cluster("gb-bench-", rest=True) as c, tempfile.TemporaryDirectory() as tmp:
        token = Path(tmp) / "jwt"
        token.write_text(c.token(lifespan=24 * 3600))
        rest = (
            f', submit_via: rest, rest: {{url: "{c.rest_url}", user: root, token_file: "{token}"}}'
        )
        # alternate the two, several rounds: a 2-core machine running slurmctld, slurmd and
        # the jobs themselves is noisy, so compare medians measured side by side
        shell, gb, gb_text, gb_quiet, gb_rest, gb_array = [], [], [], [], [], []
        for _ in range(a.rounds):
            shell.append(shell_loop_rate(c, a.jobs, a.concurrency))
            c.wait_quiet(60)
            gb.append(gridbench_rate(c, a.jobs, a.concurrency, Path(tmp)))
            c.wait_quiet(60)
            gb_text.append(
                gridbench_rate(c, a.jobs, a.concurrency, Path(tmp), extra=", squeue_format: text")
            )
            c.wait_quiet(60)
            gb_quiet.append(
                gridbench_rate(c, a.jobs, a.concurrency, Path(tmp), status_interval=30.0)
            )
            c.wait_quiet(60)
            gb_rest.append(
                gridbench_rate(
                    c, a.jobs, a.concurrency, Path(tmp), status_interval=30.0, extra=rest
                )
            )
            c.wait_quiet(60)
            gb_array.append(
                gridbench_rate(c, a.jobs, a.concurrency, Path(tmp), status_interval=30.0, bulk=50)
            )
            c.wait_quiet(60)
        med = statistics.median
        base = med(shell)
        print(f"sbatch throughput, {a.jobs} jobs, concurrency {a.concurrency}, {a.rounds} rounds:")
        print(f"  shell loops:                    median {base:.0f}/s  {_runs(shell)}")
        print(
            f"  gridbench (squeue every 1 s):   median {med(gb):.0f}/s  {_runs(gb)}"
            f"  = {med(gb) / base:.0%} of the shell loop (target >= 90%)"
        )
        print(
            f"  gridbench (squeue -O every 1 s): median {med(gb_text):.0f}/s  "
            f"{_runs(gb_text)}  = {med(gb_text) / base:.0%}"
        )
        print(
            f"  gridbench (squeue every 30 s):  median {med(gb_quiet):.0f}/s  "
            f"{_runs(gb_quiet)}  = {med(gb_quiet) / base:.0%}"
        )
        print(
            f"  gridbench via slurmrestd:       median {med(gb_rest):.0f}/s  "
            f"{_runs(gb_rest)}  = {med(gb_rest) / base:.0%}"
        )
        print(
            f"  gridbench, arrays of 50:        median {med(gb_array):.0f}/s  "
            f"{_runs(gb_array)}  = {med(gb_array) / base:.0%}"
        )
        polling_cost(c, a.queued, a.seconds)


if __name__ == "__main__":
    main()
