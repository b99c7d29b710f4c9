"""Agents on Dask against the in-process noop backend (issue 13, Performance).

Prints, in one run:

1. the aggregate achieved submission rate of the open model with the agents in the
   controller's process (``agents: 1``, the baseline), and with 1 and 2 agent processes
   (``agents: {processes: N}``):

   a. saturated: offered far more than the agents can submit (``--saturate``/s, nothing
      dropped), the submissions over their own span, median of ``--repeat`` runs: the
      throughput the agents reach;
   b. kept: the highest of a list of offered rates each keeps (at most 5% of submissions
      later than 5 ms, 1% dropped): on a 2-core VM whose two cores both agents fill, this
      one depends on every other wake-up of the machine and varies from run to run;
2. the controller's CPU (its process: Dask scheduler, pulls and the merge into the trial's
   log, events.arrows by default;
   the agents are other processes) per 100,000 merged events (every trial runs in a fresh
   controller process);
3. the merge cost of 16 agents' logs of 1,000,000 events in all: the streaming path
   (pulled CSV lines appended as bytes to an events.csv, or parsed and appended as record
   batches to an events.arrows; and agents' Arrow logs, as agents of an Arrow trial write
   them, pulled as whole IPC messages and decoded into events.arrows, as during a trial)
   and ``gridbench collect``'s path (``--merge-only``: this alone, best of ``--repeat``).

    PYTHONPATH=src .venv/bin/python bench/bench_agents.py [--rates 4000,8000,...] [--seconds 3]
        [--saturate 150000] [--repeat 5] [--merge-only]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import polars as pl

from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.log import EventLog, Origin
from gridbench.jobflow.events.trial_log import open_trial_log, read_trial_log
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.run.agent_collect import merge_logs
from gridbench.jobflow.run.agent_merge import LogMerger
from gridbench.jobflow.run.agent_worker import read_log
from gridbench.jobflow.spec import load_spec_text, make_plan


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one(
    agents: str, rate: float, seconds: float, root: Path, max_lateness: str = "1s"
) -> dict[str, Any]:
    """One trial in a fresh controller process (a long-lived bench process would carry the
    earlier trials' heap into every later one's controller, and its collections take CPU
    from the agents); its figures as :func:`one_here` gives them."""
    argv = [sys.executable, __file__, "--one", agents, str(rate), str(seconds), str(root)]
    out = subprocess.run(
        [*argv, max_lateness], capture_output=True, text=True, check=False, timeout=900
    )
    if out.returncode != 0:
        raise SystemExit(f"a bench trial failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def one_here(
    agents: str, rate: float, seconds: float, root: Path, max_lateness: str = "1s"
) -> dict[str, Any]:
    """One trial in this process; the achieved rate over the offered window, and over the
    submissions' own span (controller time)."""
    spec, data = load_spec_text(
        f"""
name: bench-agents
backend: {{type: noop, options: {{runtime_s: 0.2}}}}
load: {{model: open, rate: {rate}/s, pool: 64, late_threshold: 5ms, max_lateness: {max_lateness},
  agents: {agents}}}
trial: {{duration: {seconds}s}}
timeouts: {{status_interval: 0.5s, drain: 30s}}
safety: {{max_rate: 1000000/s, max_jobs: 10000000, confirm_above: 10000000}}
"""
    )
    runner = ExperimentRunner(make_plan(spec, data), data, root)
    c0, t0 = _cpu(), time.perf_counter()
    out = asyncio.run(runner.execute())
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    tdir = out.run.trial_dir("p00-t00")
    ev = read_trial_log(tdir, columns=["job", "stage", "t_ns", "clock_offset_ns"])
    sub = ev.filter(pl.col("stage") == "submit")
    t = sub["t_ns"] - sub["clock_offset_ns"]  # controller time
    span_s = ((t.max() or 0) - (t.min() or 0)) / 1e9  # type: ignore[operator]
    wide = ev.filter(pl.col("stage").is_in(["intended", "submit"])).pivot(
        on="stage", index="job", values="t_ns", aggregate_function="first"
    )
    lag = (wide["submit"] - wide["intended"]).drop_nulls()  # same agent: same clock
    info = json.loads((tdir / "trial.json").read_text())
    return {
        "agents": agents,
        "offered": rate,
        "submitted": sub.height,
        "achieved": sub.height / seconds,  # submissions over the offered window
        "throughput": sub.height / span_s if span_s > 0 else 0.0,  # over their own span
        "failed": ev.filter(pl.col("stage") == "failed").height,  # dropped or refused
        "late_share": float((lag > LATE_NS).mean() or 0.0) if lag.len() else 0.0,
        "events": ev.height,
        "controller_cpu_s": cpu,
        "wall_s": wall,
        "skews_ms": [
            round((a.get("start_skew_ns") or 0) / 1e6, 1) for a in info["agents"].values()
        ],
    }


def synth_logs(root: Path, agents: int, total: int, *, arrow: bool = False) -> list[Path]:
    """``agents`` logs of ``total`` events in all, written as agents write them (CSV, or
    Arrow in batches of 1,024 events: what 0.1 s brings an agent at ~10,000/s)."""
    clock = AnchoredClock()
    paths = []
    per = total // agents
    for k in range(agents):
        p = root / f"agent-{k}.events.{'arrows' if arrow else 'csv'}"
        with ArrowEventLog(p, batch_size=1024) if arrow else EventLog(p, batch_size=4096) as log:
            t = clock.now_ns()
            for i in range(per // 4):
                job = f"p00-t00-{k:02d}{i:07d}"
                for j, stage in enumerate(("intended", "submit", "submit_ack", "client_done")):
                    attrs = f'{{"backend_id":"{i}"}}' if stage == "submit_ack" else None
                    who = Origin(agent=f"agent-{k}")
                    log.append(job, stage, t + i * 1000 + j, who, attrs=attrs)
        paths.append(p)
    return paths


def _stream(paths: list[Path], trial_dir: Path, fmt: Literal["csv", "arrow"], total: int) -> float:
    """CPU seconds of merging ``paths`` as a trial does, pull by pull (1 MiB each)."""
    trial_dir.mkdir()
    c0 = _cpu()
    with open_trial_log(trial_dir, fmt) as elog:
        for p in paths:
            m, first = LogMerger(elog), True
            with open(p, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    cut = chunk.rfind(b"\n") + 1  # the pull hands over complete lines
                    fh.seek(cut - len(chunk), 1)
                    m.add(chunk[:cut], first)
                    first = False
            m.close()
    cpu = _cpu() - c0
    merged = read_trial_log(trial_dir, columns=["job"]).height
    assert merged == total, (fmt, merged, total)
    return cpu


def _stream_arrow_agents(paths: list[Path], trial_dir: Path, total: int) -> float:
    """CPU seconds of merging agents' Arrow logs into events.arrows as a trial does: each
    pulled by ``read_log`` (whole IPC messages) and decoded against the earlier pulls."""
    trial_dir.mkdir()
    c0 = _cpu()
    with open_trial_log(trial_dir, "arrow") as elog:
        for p in paths:
            m, offset = LogMerger(elog, columnar=True), 0
            while True:
                data, offset, _ = read_log(str(p), offset)
                if not data:
                    break
                m.add(data, False)
            m.close()
    cpu = _cpu() - c0
    merged = read_trial_log(trial_dir, columns=["job"]).height
    assert merged == total, ("arrow agents", merged, total)
    return cpu


def merge_costs(root: Path, agents: int = 16, total: int = 1_000_000) -> dict[str, float]:
    paths = synth_logs(root, agents, total)
    stream = _stream(paths, root / "stream-csv", "csv", total)
    stream_arrow = _stream(paths, root / "stream-arrow", "arrow", total)
    arrow_logs = synth_logs(root / "arrow-agents", agents, total, arrow=True)
    stream_arrow_agents = _stream_arrow_agents(arrow_logs, root / "stream-arrow-agents", total)
    collect_dir = root / "collect"
    collect_dir.mkdir()
    c0 = _cpu()
    merged = merge_logs(collect_dir, paths)
    collect = _cpu() - c0
    c0 = _cpu()
    again = merge_logs(collect_dir, paths)  # idempotent: nothing to add
    recollect = _cpu() - c0
    assert merged == total and again == 0, (merged, again)
    return {
        "stream_s": stream,
        "stream_arrow_s": stream_arrow,
        "stream_arrow_agents_s": stream_arrow_agents,
        "collect_s": collect,
        "recollect_s": recollect,
    }


LATE_NS = 5_000_000  # late_threshold: 5 ms
KEPT_LATE, KEPT_FAILED = 0.05, 0.01  # a rate is kept: <= 5% late and <= 1% dropped


def _kept(r: dict[str, Any], jobs: float) -> bool:
    return bool(r["failed"] <= KEPT_FAILED * jobs and r["late_share"] <= KEPT_LATE)


def sustained(agents: str, rates: list[float], seconds: float, root: Path) -> dict[str, Any]:
    """The highest offered rate kept (at most 5% of the submissions later than 5 ms and 1%
    dropped or refused) in the better of two tries; rates are tried in order until one is
    not kept."""
    best: dict[str, Any] = {"agents": agents, "offered": 0.0, "achieved": 0.0, "events": 1}
    best |= {"submitted": 0, "failed": 0, "late_share": 0.0, "controller_cpu_s": 0.0}
    best["skews_ms"] = []
    for rate in rates:
        # two tries: on a 2-core VM one stall of a second (another process's burst) drops
        # a second's jobs, which says little about the rate an agent keeps
        tries = [one(agents, rate, seconds, root)]
        if not _kept(tries[0], rate * seconds):
            tries.append(one(agents, rate, seconds, root))
        r = min(tries, key=lambda t: (not _kept(t, rate * seconds), t["late_share"]))
        if not _kept(r, rate * seconds):
            break
        best = r
    return best


def saturated(
    configs: tuple[str, ...], rate: float, seconds: float, root: Path, repeat: int
) -> list[dict[str, Any]]:
    """Per configuration, the median run (by throughput) of ``repeat`` runs offered
    ``rate``, far above what the agents can submit; nothing is dropped (max_lateness 10
    min). The configurations take turns, in alternating order, so that a slow spell of the
    machine falls on all of them alike."""
    runs: dict[str, list[dict[str, Any]]] = {a: [] for a in configs}
    for k in range(repeat):
        for a in configs if k % 2 == 0 else configs[::-1]:
            runs[a].append(one(a, rate, seconds, root, max_lateness="600s"))
    out = []
    for a in configs:
        ranked = sorted(runs[a], key=lambda r: r["throughput"])
        out.append(ranked[len(ranked) // 2] | {"all": [round(r["throughput"]) for r in runs[a]]})
    return out


def main() -> None:
    if len(sys.argv) == 7 and sys.argv[1] == "--one":  # one trial, for one()
        _, _, agents, rate, seconds, root, late = sys.argv
        r = one_here(agents, float(rate), float(seconds), Path(root), late)
        print(json.dumps(r))
        return
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rates", default="8000,16000,24000,32000,40000,48000,56000,64000")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--saturate", type=float, default=150000.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--merge-only", action="store_true", help="the merge costs alone")
    args = ap.parse_args()
    if args.merge_only:
        with tempfile.TemporaryDirectory() as tmp:
            runs = []
            for k in range(args.repeat):
                (Path(tmp) / str(k)).mkdir()
                runs.append(merge_costs(Path(tmp) / str(k)))
            _print_merge({key: min(m[key] for m in runs) for key in runs[0]})
        return
    rates = [float(x) for x in args.rates.split(",")]
    configs = ("1", "{processes: 1}", "{processes: 2}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sat = saturated(configs, args.saturate, 2.0, root, args.repeat)
        print(
            f"saturated: offered {args.saturate:,.0f}/s for 2 s (more than the agents can "
            f"submit), nothing dropped; submissions over their span, median of {args.repeat} "
            "(the configurations taking turns)"
        )
        print(
            f"{'agents':>16} {'achieved/s':>11} {'runs':>24} {'ctl CPU s':>9} {'CPU/100k ev':>11}"
        )
        for r in sat:
            per100k = r["controller_cpu_s"] / max(r["events"], 1) * 1e5
            print(
                f"{r['agents']:>16} {r['throughput']:>11,.0f} {r['all']!s:>40} "
                f"{r['controller_cpu_s']:>9.2f} {per100k:>11.2f}"
            )
        ratio = sat[2]["throughput"] / sat[1]["throughput"] if sat[1]["throughput"] else 0.0
        print(f"saturated, 2 processes / 1 process: {ratio:.2f}x (goal >= 1.8x)")
        rows = [sustained(a, rates, args.seconds, root) for a in configs]
        print(
            f"highest rate kept (<= 5% late by > 5 ms, <= 1% dropped) of {args.rates}/s, "
            f"{args.seconds:g}s each, noop backend; agents '1' = in the controller's process "
            "(baseline)"
        )
        print(
            f"{'agents':>16} {'offered/s':>10} {'achieved/s':>11} {'failed':>7} {'late':>6} "
            f"{'ctl CPU s':>9} {'CPU/100k ev':>11}  start skew ms"
        )
        for r in rows:
            per100k = r["controller_cpu_s"] / max(r["events"], 1) * 1e5
            print(
                f"{r['agents']:>16} {r['offered']:>10.0f} {r['achieved']:>11.0f} "
                f"{r['failed']:>7} {r['late_share']:>6.1%} {r['controller_cpu_s']:>9.2f} "
                f"{per100k:>11.2f}  "
                f"{r['skews_ms']}"
            )
        ratio = rows[2]["achieved"] / rows[1]["achieved"] if rows[1]["achieved"] else 0.0
        print(f"kept, 2 processes / 1 process: {ratio:.2f}x")
        (root / "merge").mkdir()
        _print_merge(merge_costs(root / "merge"))


def _print_merge(m: dict[str, float]) -> None:
    print(
        f"merge of 16 agents' logs, 1,000,000 events: streaming into events.csv "
        f"{m['stream_s']:.2f} s CPU ({1e6 / m['stream_s']:,.0f} ev/s), into events.arrows "
        f"{m['stream_arrow_s']:.2f} s ({1e6 / m['stream_arrow_s']:,.0f} ev/s), agents' Arrow "
        f"logs into events.arrows {m['stream_arrow_agents_s']:.2f} s "
        f"({1e6 / m['stream_arrow_agents_s']:,.0f} ev/s); collect "
        f"{m['collect_s']:.2f} s, collect again (nothing new) {m['recollect_s']:.2f} s"
    )


if __name__ == "__main__":
    main()
