"""Credential issue on a live Slurm (started here on loopback, as root): does the probe load
the server it measures? (issue 14, Performance)

100 sequential ``scontrol token`` requests through gridbench's probe model
(``operation: credential``), then the same 100 calls from a plain shell loop, on the same
cluster in the same run. For each: wall time per request, the client's CPU per request
(gridbench's own process; the ``scontrol`` children it runs; the shell loop's children) and
slurmctld's CPU per request, read from /proc before and after (psutil ``cpu_times``: exact,
not sampled). gridbench's own analysis figures (server_processes sampling every 0.5 s) are
printed beside them.

    .venv/bin/python bench/bench_credential.py [--requests 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan
from slurm_cluster import SlurmCluster, running_cluster


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def _usage(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def through_gridbench(c: SlurmCluster, n: int, root: Path) -> dict[str, Any]:
    """n credential probes, back to back; CPU of gridbench, its children and slurmctld."""
    ctld = psutil.Process(c.procs["slurmctld"].pid)
    text = f"""
name: credential-bench
backend: {{type: slurm, options: {{conf: {c.conf}}}}}
load: {{model: probe, operation: credential, count: {n}, gap: 0s}}
server_processes: [{{pid: {ctld.pid}, label: slurmctld}}]
"""
    spec, data = load_spec_text(text)
    runner = ExperimentRunner(make_plan(spec, data), data, root)
    s0, k0, c0 = _usage(resource.RUSAGE_SELF), _usage(resource.RUSAGE_CHILDREN), _cpu(ctld)
    t0 = time.perf_counter()
    out = asyncio.run(runner.execute())
    wall = time.perf_counter() - t0
    s1, k1, c1 = _usage(resource.RUSAGE_SELF), _usage(resource.RUSAGE_CHILDREN), _cpu(ctld)
    trial = analyze_run(out.run.path)["points"][0]["trials"][0]
    model = trial["model"]
    srv = trial.get("server_resources", {}).get("slurmctld", {})
    return {
        "ok": model["single"]["n"],
        "errors": model["single"]["errors"],
        "mean_s": model["single"]["mean"],
        "wall_per_req_s": wall / n,
        "own_cpu_per_req_s": (s1 - s0) / n,
        "children_cpu_per_req_s": (k1 - k0) / n,
        "ctld_cpu_per_req_s": (c1 - c0) / n,
        "sampled_ctld_cpu_per_op_s": srv.get("cpu_s_per_op"),
        "sampled_client_cpu_per_op_s": srv.get("client_cpu_s_per_op"),
    }


def shell_loop(c: SlurmCluster, n: int) -> dict[str, Any]:
    """The baseline: n ``scontrol token`` calls from a bash loop."""
    ctld = psutil.Process(c.procs["slurmctld"].pid)
    loop = f"for i in $(seq {n}); do scontrol token >/dev/null || exit 1; done"
    k0, c0 = _usage(resource.RUSAGE_CHILDREN), _cpu(ctld)
    t0 = time.perf_counter()
    subprocess.run(["bash", "-c", loop], env=c.env | {"PATH": "/usr/bin:/bin"}, check=True)
    wall = time.perf_counter() - t0
    k1, c1 = _usage(resource.RUSAGE_CHILDREN), _cpu(ctld)
    return {
        "wall_per_req_s": wall / n,
        "children_cpu_per_req_s": (k1 - k0) / n,
        "ctld_cpu_per_req_s": (c1 - c0) / n,
    }


def ms(x: float | None) -> str:
    return "–" if x is None else f"{x * 1e3:8.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3, help="gridbench/shell pairs")
    a = ap.parse_args()
    with running_cluster("gb-bench-cred-", rest=True) as c, tempfile.TemporaryDirectory() as tmp:
        c.run("scontrol", "token")  # the cluster issues tokens at all
        gb: list[dict[str, Any]] = []
        sh: list[dict[str, Any]] = []
        for r in range(a.rounds):  # alternate who goes first (shared-CPU bursts)
            for side in ("gridbench", "shell") if r % 2 == 0 else ("shell", "gridbench"):
                if side == "gridbench":
                    gb.append(through_gridbench(c, a.requests, Path(tmp) / f"r{r}"))
                else:
                    sh.append(shell_loop(c, a.requests))
        print(f"{a.requests} sequential scontrol token requests, {a.rounds} rounds (medians), ms")
        rows = [
            ("wall per request", "wall_per_req_s"),
            ("client CPU per request: scontrol processes", "children_cpu_per_req_s"),
            ("slurmctld CPU per request (/proc)", "ctld_cpu_per_req_s"),
        ]
        med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
        print(f"{'':48}{'gridbench':>10}{'shell':>10}")
        for label, key in rows:
            print(f"{label:48}{ms(med(gb, key)):>10}{ms(med(sh, key)):>10}")
        print(
            f"{'client CPU per request: gridbench itself':48}{ms(med(gb, 'own_cpu_per_req_s')):>10}"
        )
        print(f"{'probe latency mean (op_start..op_end)':48}{ms(med(gb, 'mean_s')):>10}")
        for label, key in (
            ("report: server CPU ms/op (sampled 0.5 s)", "sampled_ctld_cpu_per_op_s"),
            ("report: client CPU ms/op (sampled 0.5 s)", "sampled_client_cpu_per_op_s"),
        ):
            got = [x[key] for x in gb if x[key] is not None]
            print(f"{label:48}{ms(statistics.median(got) if got else None):>10}")
        print(f"tokens issued: {[x['ok'] for x in gb]}, errors: {[x['errors'] for x in gb]}")


if __name__ == "__main__":
    main()
