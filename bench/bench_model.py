"""What-if model engine (issue 25): SimGrid against SimPy on one chain, and the scale target.

Prints, in one run:

1. the same minimal chain (open arrivals → CE with 4 servers → bridge with 4 servers →
   a worker pool of ``--slots`` slots → done) on SimGrid 3.32's Python API (Debian's
   python3-simgrid: one actor per server and slot, mailboxes between tiers; it runs in a
   child of the venv's Python with /usr/lib/python3/dist-packages on its path) and on
   SimPy 4 (timeouts with callbacks, as gridbench.model.engine does): simulated jobs per
   second of wall time, and the ratio;
2. gridbench's own engine (the full chain model: client hop, CE, transfer, bridge, worker
   pool, batched status updates, client polling, rows to a sink in chunks) for
   ``--hours`` of a grid at ``--rate`` jobs/s with ``--workers`` slots: wall time,
   simulated events per second and peak RSS, against the issue's target (an hour at
   1,000 jobs/s with 10,000 slots on one core in at most 10 minutes).

    PYTHONPATH=src .venv/bin/python bench/bench_model.py [--jobs 5000] [--slots 2000]
        [--rate 1000] [--workers 10000] [--hours 1.0]
"""

from __future__ import annotations

import argparse
import collections
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np
import simpy

from gridbench.model.engine import ChainSim, Offer
from gridbench.model.spec import ChainModel

SIMGRID = r"""
import sys, time
sys.path.append("/usr/lib/python3/dist-packages")
import numpy as np
from simgrid import Actor, Engine, Mailbox, NetZone, this_actor
N, S, C = int(sys.argv[1]), int(sys.argv[2]), 4
e = Engine(["sg", "--log=root.thresh:critical"])
z = NetZone.create_full_zone("z"); h = z.create_host("h", 1e9); z.seal()
rng = np.random.default_rng(1); done = [0]
def gen():
    mb = Mailbox.by_name("ce")
    for i in range(N):
        this_actor.sleep_for(0.001); mb.put_init(i, 0).detach()
def tier(src, dst, mean):
    def run():
        a, b = Mailbox.by_name(src), Mailbox.by_name(dst)
        while True:
            j = a.get()
            this_actor.sleep_for(float(rng.exponential(mean)))
            b.put_init(j, 0).detach()
    return run
def slot():
    a = Mailbox.by_name("dg")
    while True:
        a.get(); this_actor.sleep_for(float(rng.lognormal(-0.04, 0.3))); done[0] += 1
for i in range(C): Actor.create(f"ce{i}", h, tier("ce", "br", 0.0005)).daemonize()
for i in range(C): Actor.create(f"br{i}", h, tier("br", "dg", 0.0005)).daemonize()
for i in range(S): Actor.create(f"s{i}", h, slot).daemonize()
Actor.create("gen", h, gen)
def tail(): this_actor.sleep_for(N * 0.001 + 20)
Actor.create("tail", h, tail)
t = time.perf_counter(); e.run(); dt = time.perf_counter() - t
print(N, done[0], dt)
"""


def simpy_chain(n: int, slots: int) -> tuple[int, float]:
    """The same chain on SimPy with callbacks (no process per job)."""
    env = simpy.Environment()
    rng = np.random.default_rng(1)
    done = [0]

    class Tier:
        def __init__(self, c: int, draw: Any, nxt: Any) -> None:
            self.free, self.q, self.draw, self.nxt = c, collections.deque[int](), draw, nxt

        def put(self, j: int) -> None:
            if self.free:
                self.free -= 1
                self.start(j)
            else:
                self.q.append(j)

        def start(self, j: int) -> None:
            env.timeout(self.draw(), j).callbacks.append(self.end)

        def end(self, ev: Any) -> None:
            if self.q:
                self.start(self.q.popleft())
            else:
                self.free += 1
            self.nxt(ev.value)

    def fin(_j: int) -> None:
        done[0] += 1

    dg = Tier(slots, lambda: float(rng.lognormal(-0.04, 0.3)), fin)
    br = Tier(4, lambda: float(rng.exponential(0.0005)), dg.put)
    ce = Tier(4, lambda: float(rng.exponential(0.0005)), br.put)

    def gen() -> Any:
        for i in range(n):
            yield env.timeout(0.001)
            ce.put(i)

    env.process(gen())
    t = time.perf_counter()
    env.run()
    return done[0], time.perf_counter() - t


def scale_model(workers: int) -> ChainModel:
    """The reference grid's chain with batched status updates and ``workers`` slots."""
    d = lambda m, cv=0.0: {"dist": "lognormal" if cv else "fixed", "mean": m, "cv": cv}  # noqa: E731
    return ChainModel.model_validate(
        {
            "client": {"to_ce": d(0.005, 0.5), "ack": d(0.004), "observe": d(0.05, 0.5)},
            "tiers": {
                "ce": {"concurrency": 64, "service": d(0.05, 0.5)},
                "transfer": {"delay": d(0.02, 0.5)},
                "bridge": {"concurrency": 64, "service": d(0.05, 0.5)},
                "workers": {"slots": workers, "runtime": d(8.0, 0.3)},
            },
            "status_update": {"policy": "batched", "per_job_cost_s": 0.05, "interval_s": 1.0},
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000, help="jobs of the engine comparison")
    ap.add_argument("--slots", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=1000.0, help="jobs/s of the scale run")
    ap.add_argument("--workers", type=int, default=10_000, help="worker slots of the scale run")
    ap.add_argument("--hours", type=float, default=1.0, help="simulated submission time")
    a = ap.parse_args()

    print(f"1. the same chain, {a.jobs:,} jobs at 1,000 jobs/s, {a.slots} slots")
    p = subprocess.run([sys.executable, "-c", SIMGRID, str(a.jobs), str(a.slots)],
                       capture_output=True, text=True, timeout=3600, check=True)  # fmt: skip
    n, sg_done, sg_wall = p.stdout.split()
    sg = int(n) / float(sg_wall)
    sp_done, sp_wall = simpy_chain(a.jobs, a.slots)
    sp = a.jobs / sp_wall
    print(f"   SimGrid 3.32 (actors, thread contexts): {sg:10,.0f} jobs/s ({sg_done} done)")
    print(f"   SimPy 4 (callbacks):                    {sp:10,.0f} jobs/s ({sp_done} done)")
    print(f"   SimPy / SimGrid: {sp / sg:.0f}x; at SimGrid's pace 3.6 M jobs take "
          f"{3.6e6 / sg / 60:.0f} min, at SimPy's {3.6e6 / sp / 60:.1f} min")  # fmt: skip

    secs = a.hours * 3600
    print(f"2. gridbench.model: {secs / 3600:g} h at {a.rate:g} jobs/s, {a.workers:,} slots")
    rows = [0]
    offer = Offer(a.rate, secs, secs + 60.0, "poisson", None)
    t, cpu = time.perf_counter(), time.process_time()
    stats = ChainSim(
        scale_model(a.workers), offer, 1, lambda c: rows.__setitem__(0, rows[0] + len(c))
    ).run()
    wall = time.perf_counter() - t
    cpu = time.process_time() - cpu  # one core's seconds: a shared machine stretches wall time
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"   {stats.jobs:,} jobs, {stats.events:,} simulated events in {cpu:.0f} CPU s "
        f"({wall:.0f} s wall): {stats.events / cpu:,.0f} events/s, {stats.jobs / cpu:,.0f} "
        f"jobs/s of one core; peak RSS {rss:.0f} MiB"
    )
    need = 3.6e6 / (stats.jobs / cpu)
    verdict = "met" if need <= 600 else "NOT met"
    print(f"   target: 600 CPU s for 3.6 M jobs; at this pace {need:.0f} s ({verdict})")


if __name__ == "__main__":
    main()
