"""100,000 jobs in flight: status-sweep cost and memory per in-flight job.

Submits N jobs (default 100,000) to the noop backend with a run time longer than the trial,
so all of them are in flight at once, and reports:
- backend status calls per sweep (target: a constant 1, whatever the number in flight);
- resident memory per in-flight job, from the RSS growth between the start of the trial
  and the moment all N were in flight (target: <= 2 KB; this includes the noop backend's
  own bookkeeping, so gridbench's share is smaller);
- the duration of one sweep at N in flight.

    .venv/bin/python bench/bench_inflight.py [--jobs 100000] [--rate 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import tempfile
import time
from pathlib import Path

import psutil

from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.run import tracker as tracker_mod
from gridbench.jobflow.run.observer import NullObserver, TrialProgress
from gridbench.jobflow.spec import load_spec_text, make_plan


class Watch(NullObserver):
    def __init__(self, n: int) -> None:
        self.n = n
        self.proc = psutil.Process()
        self.rss0 = 0
        self.rss_full = 0
        self.max_inflight = 0

    def trial_started(self, progress: TrialProgress) -> None:
        gc.collect()
        self.rss0 = self.proc.memory_info().rss

    def trial_progress(self, p: TrialProgress) -> None:
        if p.in_flight > self.max_inflight:
            self.max_inflight = p.in_flight
            if p.in_flight >= 0.99 * self.n:
                self.rss_full = self.proc.memory_info().rss


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=20_000)
    a = ap.parse_args()
    spec, data = load_spec_text(
        f"""
name: bench-inflight
backend: {{type: noop, options: {{runtime_s: 600}}}}
load: {{model: open, rate: {a.rate}/s, pool: 64}}
trial: {{jobs: {a.jobs}}}
timeouts: {{status_interval: 1s, drain: 3s}}
safety: {{max_rate: 1000000/s, max_jobs: 10000000, confirm_above: 10000000}}
"""
    )
    sweeps: list[tuple[int, float, int]] = []
    orig = tracker_mod.StatusTracker.sweep

    async def timed_sweep(self: tracker_mod.StatusTracker) -> None:
        n, calls0, t0 = len(self.inflight), self.status_calls, time.perf_counter()
        await orig(self)
        if n:
            sweeps.append((n, time.perf_counter() - t0, self.status_calls - calls0))

    tracker_mod.StatusTracker.sweep = timed_sweep  # type: ignore[method-assign]
    watch = Watch(a.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        runner = ExperimentRunner(make_plan(spec, data), data, Path(tmp), observer=watch)
        out = asyncio.run(runner.execute())
        info = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    full = [s for s in sweeps if s[0] >= a.jobs * 0.99]
    per_sweep = {c for _, _, c in sweeps}
    rss_per_job = (
        (watch.rss_full - watch.rss0) / watch.max_inflight if watch.rss_full else float("nan")
    )
    print(f"jobs in flight (max seen): {watch.max_inflight}")
    print(f"sweeps: {len(sweeps)}; backend status calls per sweep: {sorted(per_sweep)}")
    print(f"trial status_calls={info['status_calls']} sweeps={info['status_sweeps']}")
    if full:
        print(f"sweep time at {full[0][0]} in flight: {min(s[1] for s in full) * 1e3:.0f} ms")
    print(f"RSS growth per in-flight job: {rss_per_job:.0f} bytes (target <= 2048)")


if __name__ == "__main__":
    main()
