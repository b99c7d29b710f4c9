"""The MUSCLE3 driver: sends ``size`` bytes on ``out``, waits for the mirror's copy on
``in`` and times each round trip with ``perf_counter_ns``. Started by ``muscle_manager
--start-all``, or (the mirror on another host) by gridbench with ``--muscle-instance=driver
--muscle-manager=LOCATION``: ``python -m gridbench.messaging.transports.muscle_driver
PLAN.json``.

The plan (written by :func:`gridbench.messaging.transports.muscle.muscle_pingpong`) says
the sizes, T tests, M round trips, the untimed warm-up round trips per size and the
JSON-lines file each test's record is appended to (flushed at once, so a crash keeps what
was measured).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

from libmuscle import Instance, Message
from ymmsl import Operator


def _plan_path(argv: list[str]) -> Path:
    # libmuscle may append its own --muscle-* options; the plan is the first other one
    for arg in argv[1:]:
        if not arg.startswith("--muscle"):
            return Path(arg)
    raise SystemExit("muscle_driver: usage: muscle_driver PLAN.json")


def _append(out: IO[str], record: dict[str, Any]) -> None:
    out.write(json.dumps(record, separators=(",", ":")) + "\n")
    out.flush()
    os.fsync(out.fileno())


def _round_trip(instance: Instance, payload: bytes, t: float) -> int:
    start = time.perf_counter_ns()
    instance.send("out", Message(t, None, payload))
    reply = instance.receive("in")
    elapsed = time.perf_counter_ns() - start
    data = reply.data
    if not isinstance(data, bytes) or data != payload:  # checked after the clock stopped
        got = f"{len(data)} other" if isinstance(data, bytes) else type(data).__name__
        raise RuntimeError(f"the mirror returned {got} instead of the {len(payload)} bytes sent")
    return elapsed


def run(instance: Instance, plan: dict[str, Any], out: IO[str]) -> None:
    """Every size, T tests of M round trips each, one record per test."""
    t = 0.0
    for size in plan["sizes"]:
        payload = os.urandom(min(size, 1 << 16)) * (size // (1 << 16) + 1)
        payload = payload[:size]
        for _ in range(plan["warmup"]):
            _round_trip(instance, payload, t)
            t += 1.0
        for test in range(plan["tests"]):
            rtts: list[int] = []
            for _ in range(plan["round_trips"]):
                rtts.append(_round_trip(instance, payload, t))
                t += 1.0
            _append(
                out,
                {
                    "pattern": "pingpong",
                    "transport": "muscle3",
                    "env": plan.get("env", "host"),
                    "size_bytes": size,
                    "test": test,
                    "ok": True,
                    "error": None,
                    "rtt_ns": rtts,
                },
            )


def main() -> int:
    """Run the plan inside one reuse-loop iteration, then let MUSCLE3 close the ports."""
    plan = json.loads(_plan_path(sys.argv).read_text(encoding="utf-8"))
    instance = Instance({Operator.O_I: ["out"], Operator.S: ["in"]})
    while instance.reuse_instance():
        with open(plan["out"], "a", encoding="utf-8") as out:
            run(instance, plan, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
