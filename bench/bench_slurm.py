"""gridbench against a live Slurm (started here on loopback, as root): harness cost.

1. Submission throughput through ``sbatch``: gridbench's batch model with K submitters
   against a plain shell loop of ``sbatch`` with the same concurrency (K parallel loops),
   in the same run, on the same cluster. Target: gridbench >= 90% of the shell loop.

   The partition is down while this is measured, so jobs stay pending: both sides pay for
   submission only, not for jobs starting on the same two cores. gridbench polls status
   as usual (every 1 s: each sweep lists every job the controller holds). The two are
   measured in pairs, alternating which goes first, and the figure is the median of the
   per-pair ratios; between measurements every job is cancelled and purged
   (``MinJobAge=2``), so each one starts from an empty controller. Shared virtual
   machines steal CPU in bursts: pairs keep a burst from landing on one side only.
2. Polling cost with many jobs queued: one status sweep = one ``squeue`` call, timed;
   and the controller's RPC counts (``sdiag``) over the same period with the tracker
   polling and without it.

    .venv/bin/python bench/bench_slurm.py [--jobs 600] [--concurrency 8] [--pairs 6]
                                          [--queued 10000] [--seconds 10]
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan
from slurm_cluster import PARTITION, SlurmCluster, running_cluster


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
    drain: str = "300s",
) -> float:
    """Acknowledged jobs per second from the first submit to the last acknowledgement."""
    spec, data = load_spec_text(
        f"""
name: bench-slurm-batch
backend: {{type: slurm, options: {{conf: "{c.conf}", max_concurrent_submits: {k},
           env: {{MUNGE_SOCKET: "{c.munge_socket}"}}{extra}}}}}
job: {{command: [/bin/true]}}
load: {{model: batch, jobs: {jobs}, submitters: {k}, bulk: {bulk}}}
timeouts: {{status_interval: {status_interval}s, drain: {drain}}}
safety: {{max_jobs: 1000000, confirm_above: 1000000}}
"""
    )
    out = asyncio.run(ExperimentRunner(make_plan(spec, data), data, root).execute())
    ev = read_trial_log(out.run.trial_dir("p00-t00"))
    sub = ev.filter(pl.col("stage") == "submit")["t_ns"]
    ack = ev.filter(pl.col("stage") == "submit_ack")["t_ns"]
    return ack.len() / ((ack.max() - sub.min()) / 1e9)  # type: ignore[operator]


def purge(c: SlurmCluster, timeout: float = 120.0) -> None:
    """Cancel every job by id and wait until the controller has forgotten them all."""
    ids = c.run("squeue", "-h", "-t", "PD,R,CG,S", "-o", "%i", check=False).split()
    for i in range(0, len(ids), 500):
        c.run("scancel", *ids[i : i + 500], check=False)
    deadline = time.monotonic() + timeout
    while c.run("squeue", "-h", "-t", "all", "-o", "%i", check=False).strip():
        if time.monotonic() > deadline:
            raise SystemExit("the controller kept ended jobs past MinJobAge: cannot compare")
        time.sleep(0.5)


VARIANTS = {
    "text": "gridbench, squeue -O every 1 s",
    "json": "gridbench, squeue --json every 1 s",
    "rest": "gridbench through slurmrestd",
    "arrays": "gridbench, job arrays of 50",
}


def throughput(
    c: SlurmCluster, jobs: int, k: int, pairs: int, root: Path, rest: str, only: list[str]
) -> None:
    """Shell loop against gridbench variants, in alternating pairs; no job starts."""
    # a down partition takes jobs but starts none (slurmrestd refuses jobs for drained nodes)
    c.run("scontrol", "update", f"partitionname={PARTITION}", "state=down", check=True)
    held = "1s"  # jobs stay pending: end the trial soon after the last submission
    runs: dict[str, Callable[[], float]] = {
        "text": lambda: gridbench_rate(c, jobs, k, root, drain=held),  # the default format
        "json": lambda: gridbench_rate(c, jobs, k, root, drain=held, extra=", squeue_format: json"),
        "rest": lambda: gridbench_rate(c, jobs, k, root, drain=held, extra=rest),
        "arrays": lambda: gridbench_rate(c, jobs, k, root, drain=held, bulk=50),
    }
    variants = {VARIANTS[key]: runs[key] for key in only}
    shell: list[float] = []
    rates: dict[str, list[float]] = {name: [] for name in variants}
    ratios: dict[str, list[float]] = {name: [] for name in variants}
    purge(c)
    for i in range(pairs):
        for name, run in variants.items():
            order = ["shell", name] if i % 2 == 0 else [name, "shell"]
            got: dict[str, float] = {}
            for side in order:
                got[side] = shell_loop_rate(c, jobs, k) if side == "shell" else run()
                purge(c)
            shell.append(got["shell"])
            rates[name].append(got[name])
            ratios[name].append(got[name] / got["shell"])
        print(
            f"  pair {i + 1}/{pairs}: shell {shell[-1]:.0f}/s; "
            + ", ".join(f"{r[-1]:.0%}" for r in ratios.values()),
            flush=True,
        )
    c.run("scontrol", "update", f"partitionname={PARTITION}", "state=up", check=False)
    med = statistics.median
    print(
        f"\nsbatch throughput, {jobs} jobs per measurement, concurrency {k}, {pairs} pairs "
        "per variant (partition down, median of per-pair ratios):"
    )
    print(f"  {'shell loops of sbatch (baseline)':38s} median {med(shell):6.0f}/s")
    for name in variants:
        target = "  (target >= 90%)" if name == VARIANTS["text"] else ""
        print(
            f"  {name:38s} median {med(rates[name]):6.0f}/s  = {med(ratios[name]):.0%} of "
            f"the shell loop; pairs {_pct(ratios[name])}{target}"
        )


def _pct(xs: list[float]) -> str:
    return "(" + ", ".join(f"{x:.0%}" for x in xs) + ")"


Counts = dict[str, int]


def _delta(before: Counts, after: Counts) -> Counts:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


def rpc_counts(c: SlurmCluster) -> Counts:
    out = c.run("sdiag")
    counts = {}
    for m in re.finditer(r"^\s*(REQUEST_\w+|MESSAGE_\w+)\s*\(\s*\d+\)\s*count:(\d+)", out, re.M):
        counts[m.group(1)] = int(m.group(2))
    return counts


def polling_cost(c: SlurmCluster, queued: int, seconds: float) -> None:
    c.run("scontrol", "update", "nodename=ALL", "state=drain", "reason=bench", check=False)
    shell_loop_rate(c, queued, 8)  # queue them as fast as the controller takes them
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

    async def sweeps(fmt: str, n: int, interval: float) -> tuple[list[float], float, Counts]:
        """Sweep times (wall), the client CPU of the squeue children per sweep, and the
        controller's RPCs over the sweeps (counted after open(): its checks are not
        polling)."""
        b = backend(fmt)
        await b.open()
        took = []
        try:
            rpc0 = rpc_counts(c)
            cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            for _ in range(n):
                t0 = time.perf_counter()
                await b.status(ids)
                took.append(time.perf_counter() - t0)
                await asyncio.sleep(interval)
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            rpc1 = rpc_counts(c)
        finally:
            await b.close()
        cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
        return took, cpu / n, _delta(rpc0, rpc1)

    n = int(seconds)
    base0 = rpc_counts(c)
    time.sleep(seconds)
    idle = _delta(base0, rpc_counts(c))
    took, cpu, polled = asyncio.run(sweeps("json", n, 1.0))
    took_text, cpu_text, polled_text = asyncio.run(sweeps("text", n, 1.0))
    med = statistics.median
    print(f"\npolling cost with {len(ids)} jobs queued ({n} sweeps, 1/s):")
    print(
        f"  squeue --json per sweep: median {med(took) * 1e3:.0f} ms, max {max(took) * 1e3:.0f}"
        f" ms, client CPU {cpu * 1e3:.0f} ms; backend calls per sweep: 1"
    )
    print(
        f"  squeue -O (text) per sweep: median {med(took_text) * 1e3:.0f} ms, max "
        f"{max(took_text) * 1e3:.0f} ms, client CPU {cpu_text * 1e3:.0f} ms "
        f"({med(took) / med(took_text):.1f}x faster, {cpu / max(cpu_text, 1e-9):.1f}x less "
        "CPU than --json)"
    )
    keys = sorted(k for k in {*idle, *polled, *polled_text} if idle.get(k) or polled.get(k))
    print(f"  {'controller RPC':32s} {'idle ' + str(n) + 's':>10s} {'--json':>10s} {'-O':>10s}")
    for k in keys:
        print(
            f"  {k:32s} {idle.get(k, 0):>10d} {polled.get(k, 0):>10d} {polled_text.get(k, 0):>10d}"
        )
    purge(c)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=600, help="jobs per measurement")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=6, help="shell/gridbench pairs per variant")
    ap.add_argument(
        "--only",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        help="gridbench variants to measure (default: all)",
    )
    ap.add_argument("--queued", type=int, default=10000, help="jobs queued for polling cost")
    ap.add_argument("--seconds", type=float, default=10.0, help="polling-cost window")
    a = ap.parse_args()
    with (
        running_cluster("gb-bench-", rest=True, min_job_age=2) as c,
        tempfile.TemporaryDirectory() as tmp,
    ):
        token = Path(tmp) / "jwt"
        token.write_text(c.token(lifespan=24 * 3600))
        rest = (
            f', submit_via: rest, rest: {{url: "{c.rest_url}", user: root, token_file: "{token}"}}'
        )
        throughput(c, a.jobs, a.concurrency, a.pairs, Path(tmp), rest, a.only)
        polling_cost(c, a.queued, a.seconds)


if __name__ == "__main__":
    main()
