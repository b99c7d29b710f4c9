"""Server-stamp collection cost (issue 23, Performance): the client's CPU per job for
reading and joining A-REX-over-Slurm stamps, declared as data (``stamps: {use:
arc-slurm}``), against baselines measured in the same run.

A synthetic site grows as a real one does (the records are shaped as tests/stamp_data,
captured from ARC 6.17 over Slurm 22.05): each sweep adds ``--per-sweep`` jobs to A-REX's
accounting.db (five JobEvents rows each, one ``job.<id>.local`` file) and four lines each
to a slurmctld log with ``--noise`` foreign lines per job. Printed:

1. CPU per job of the declared collector (one query, one log read, one directory scan per
   sweep, then the join), the way the command backend runs it each status sweep;
2. the baseline: the same sweeps without collection (only the site growing), so the
   difference is what collection costs;
3. a per-job reader for contrast: one query per job per sweep (what "never one call per
   job" avoids), on the same database;
4. queries the collector made against the database per sweep (1, by construction);
5. end to end through the runner on the demo CLI (the command backend's demo preset): the
   CPU of gridbench's own process per job with and without ``stamps: {use: demo}`` (one
   directory scan of the demo's per-job ``started`` files each sweep), and of the client
   processes it ran, alternating the two ``--repeat`` times.

    PYTHONPATH=src .venv/bin/python bench/bench_stamps.py [--sweeps 40] [--per-sweep 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from gridbench.jobflow.events.stamps.collector import StampCollector
from gridbench.jobflow.events.stamps.declare import parse_plan
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan

SCHEMA = """
CREATE TABLE AAR (RecordID INTEGER PRIMARY KEY AUTOINCREMENT, JobID TEXT NOT NULL UNIQUE,
  LocalJobID TEXT);
CREATE TABLE JobEvents (RecordID INTEGER NOT NULL, EventKey TEXT NOT NULL,
  EventTime TEXT NOT NULL);
CREATE INDEX JobEvents_RecordID_IDX ON JobEvents(RecordID);
"""
AREX_EVENTS = ("ACCEPTED", "PREPARING", "SUBMIT", "INLRMS", "FINISHING", "FINISHED")


class Site:
    """A synthetic A-REX-over-Slurm site that grows one sweep at a time."""

    def __init__(self, root: Path, noise: int) -> None:
        self.control = root / "control"
        (self.control / "accounting").mkdir(parents=True)
        self.db = self.control / "accounting" / "accounting.db"
        with sqlite3.connect(self.db) as con:
            con.executescript(SCHEMA)
        self.log = root / "slurmctld.log"
        self.log.touch()
        self.noise = noise
        self.n = 0

    def grow(self, jobs: int) -> list[str]:
        ids = []
        t = time.gmtime(1_795_752_800 + self.n)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", t)
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", t)
        lines: list[str] = []
        with sqlite3.connect(self.db) as con:
            for _ in range(jobs):
                self.n += 1
                aid = f"A{self.n:08d}x{'K' * 40}"
                cur = con.execute("INSERT INTO AAR (JobID) VALUES (?)", (aid,))
                con.executemany(
                    "INSERT INTO JobEvents VALUES (?, ?, ?)",
                    [(cur.lastrowid, k, stamp) for k in AREX_EVENTS],
                )
                (self.control / f"job.{aid}.local").write_text(
                    f"globalid={aid}\nlrms=slurm\nlocalid={self.n}\nqueue=debug\n"
                )
                lines += [
                    f"[{iso}.101] _slurm_rpc_submit_batch_job: JobId={self.n} InitPrio=1 usec=5",
                    f"[{iso}.202] sched: Allocate JobId={self.n} NodeList=gbnode #CPUs=1",
                    f"[{iso}.303] _job_complete: JobId={self.n} WEXITSTATUS 0",
                    f"[{iso}.304] _job_complete: JobId={self.n} done",
                ]
                lines += [f"[{iso}.400] debug: sched: Running job scheduler"] * self.noise
                ids.append(f"https://ce.example.org/arex/rest/1.0/jobs/{aid}")
        with self.log.open("a") as fh:
            fh.write("\n".join(lines) + "\n")
        return ids


def run(mode: str, sweeps: int, per: int, noise: int) -> tuple[float, int, int]:
    """(CPU seconds spent outside growing the site, stamps emitted, database queries)."""
    with tempfile.TemporaryDirectory(prefix="gb-bench-stamps-") as tmp:
        site = Site(Path(tmp), noise)
        plan = parse_plan({"use": "arc-slurm"}, "stamps")
        locs = [str(site.db), f"{site.control}/job.*.local", str(site.log)]
        collector = StampCollector(plan, locs)
        ids: list[str] = []
        cpu = 0.0
        emitted = queries = 0
        for _ in range(sweeps):
            ids += site.grow(per)
            t0 = time.process_time()
            if mode == "declared":
                emitted += len(collector.collect(ids))
                queries += 1
            elif mode == "per_job":
                with sqlite3.connect(f"file:{site.db}?mode=ro", uri=True) as con:
                    for bid in ids:
                        aid = bid.rsplit("/", 1)[1]
                        emitted += len(
                            con.execute(
                                "SELECT e.EventKey, e.EventTime FROM JobEvents e JOIN AAR a "
                                "ON a.RecordID = e.RecordID WHERE a.JobID = ?",
                                (aid,),
                            ).fetchall()
                        )
                        queries += 1
            cpu += time.process_time() - t0
        return cpu, emitted, queries


def runner_cpu(stamps: bool, jobs: int) -> tuple[float, float]:
    """(gridbench's own CPU s per job, its client processes' CPU s per job) for one run."""
    with tempfile.TemporaryDirectory(prefix="gb-bench-stamps-run-") as tmp:
        opts: dict[str, object] = {"preset": "demo", "vars": {"state_dir": f"{tmp}/state"}}
        if stamps:
            opts["stamps"] = {"use": "demo"}
        text = (
            f"name: bench-stamps\nbackend: {json.dumps({'type': 'command', 'options': opts})}\n"
            "job: {command: [/bin/true]}\nload: {model: open, rate: 20/s}\n"
            f"trial: {{jobs: {jobs}}}\ntimeouts: {{status_interval: 0.2s, drain: 60s}}\n"
        )
        spec, data = load_spec_text(text)
        runner = ExperimentRunner(make_plan(spec, data), data, Path(tmp) / "results")
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = asyncio.run(runner.execute())
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert out.status == "complete", out
        own = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        kids = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
        return own / jobs, kids / jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--per-sweep", default="5,50,250", help="new jobs per sweep (a list)")
    ap.add_argument("--noise", type=int, default=5, help="foreign log lines per job")
    ap.add_argument("--jobs", type=int, default=60, help="jobs per end-to-end run")
    ap.add_argument("--repeat", type=int, default=3, help="end-to-end runs of each kind")
    a = ap.parse_args()
    print(f"{a.sweeps} sweeps, {a.noise} foreign slurmctld lines per job; CPU of this process")
    print(
        f"{'jobs/sweep':>10} {'baseline':>12} {'declared':>12} {'per sweep':>11} "
        f"{'q/sweep':>8} {'per-job query':>14} {'q/sweep':>8} {'ratio':>7}"
    )
    for per_sweep in (int(x) for x in a.per_sweep.split(",")):
        jobs = a.sweeps * per_sweep
        base, _, _ = run("none", a.sweeps, per_sweep, a.noise)
        dec, emitted, dq = run("declared", a.sweeps, per_sweep, a.noise)
        per, _, pq = run("per_job", a.sweeps, per_sweep, a.noise)
        assert emitted == jobs * 8, (emitted, jobs)  # 5 A-REX + 3 Slurm stages, all joined
        print(
            f"{per_sweep:>10} {base / jobs * 1e6:>9.1f} µs {dec / jobs * 1e6:>9.1f} µs "
            f"{dec / a.sweeps * 1e3:>8.1f} ms {dq / a.sweeps:>8.0f} "
            f"{per / jobs * 1e6:>11.1f} µs {pq / a.sweeps:>8.0f} {per / max(dec, 1e-9):>6.2f}x"
        )
    print(
        "declared: one query, one log read and one directory scan per sweep, then the join "
        "(µs CPU per job); per-job query: one A-REX query per job and sweep (no Slurm tier); "
        "ratio: per-job / declared CPU"
    )
    runner_cpu(False, 5)  # warm the imports and the page cache
    got: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for _ in range(a.repeat):
        for with_stamps in (False, True):
            got[with_stamps].append(runner_cpu(with_stamps, a.jobs))
    own = {k: statistics.median(x for x, _ in v) for k, v in got.items()}
    kids = {k: statistics.median(y for _, y in v) for k, v in got.items()}
    print(f"end to end, demo CLI, {a.jobs} jobs at 20/s, median of {a.repeat} runs each:")
    for k, label in ((False, "without stamps"), (True, "with stamps   ")):
        print(
            f"  {label}: gridbench {own[k] * 1e3:7.2f} ms CPU/job, "
            f"its client processes {kids[k] * 1e3:7.2f} ms CPU/job"
        )
    print(
        f"  ratio gridbench with/without: {own[True] / own[False]:.2f}x; collection adds "
        f"{(own[True] - own[False]) * 1e3:.2f} ms/job, "
        f"{(own[True] - own[False]) / (own[False] + kids[False]) * 100:.1f}% of the client's "
        "CPU per job"
    )


if __name__ == "__main__":
    main()
