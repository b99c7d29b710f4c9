"""A tiny agent for the clock tests, run as its own process (under libfaketime).

It listens on 127.0.0.1 (the port is written to the file named by argv[1]) and answers
one line at a time:

- ``P`` -> ``t2,t3``: the agent's half of a four-timestamp exchange (wall clock, ns);
- ``RUN n gap_ms offset_ns events_path server_port`` -> ``OK count``: submit ``n`` jobs
  ``gap_ms`` apart to the server at ``server_port`` (one line ``SUB job`` each, answered
  ``ACK`` then ``DONE``), stamping intended/submit/submit_ack/client_done through
  gridbench's Recorder with the clock offset ``offset_ns`` into ``events_path``;
- ``Q`` -> exits.
"""

from __future__ import annotations

import select
import socket
import sys
from pathlib import Path

from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.log import EventLog
from gridbench.jobflow.events.model import (
    STAGE_CLIENT_DONE,
    STAGE_INTENDED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
)
from gridbench.jobflow.run.clock_sync import agent_half
from gridbench.jobflow.run.recorder import Recorder

AGENT = "agent-ft"


def run_jobs(n: int, gap_ms: float, offset_ns: int, events: Path, server_port: int) -> int:
    """Submit ``n`` jobs to the test's server, stamping the client stages on this clock."""
    clock = AnchoredClock()
    log = EventLog(events)
    rec = Recorder(log, clock, agent=AGENT, clock_offset_ns=offset_ns)
    with socket.create_connection(("127.0.0.1", server_port)) as s:
        f = s.makefile("rw", encoding="ascii", newline="\n")
        start = clock.now_ns()
        for i in range(n):
            job = f"j{i:04d}"
            intended = start + int(i * gap_ms * 1e6)
            while clock.now_ns() < intended:
                # not time.sleep: under libfaketime 0.9.10 with FAKETIME_DONT_FAKE_MONOTONIC
                # it fails with EINVAL (clock_nanosleep); select waits on the real clock
                select.select([], [], [], 0.0005)
            rec.stamp(job, STAGE_INTENDED, intended)
            rec.stamp(job, STAGE_SUBMIT)
            f.write(f"SUB {job}\n")
            f.flush()
            if f.readline().strip() != "ACK":
                raise SystemExit("server did not acknowledge")
            rec.stamp(job, STAGE_SUBMIT_ACK)
            if f.readline().strip() != "DONE":
                raise SystemExit("server did not finish the job")
            rec.stamp(job, STAGE_CLIENT_DONE)
    log.close()
    return n


def main() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    Path(sys.argv[1]).write_text(str(srv.getsockname()[1]))
    while True:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        f = conn.makefile("rw", encoding="ascii", newline="\n")
        for line in f:
            cmd = line.split()
            if not cmd:
                continue
            if cmd[0] == "P":
                t2, t3 = agent_half()
                f.write(f"{t2},{t3}\n")
            elif cmd[0] == "RUN":
                n = run_jobs(int(cmd[1]), float(cmd[2]), int(cmd[3]), Path(cmd[4]), int(cmd[5]))
                f.write(f"OK {n}\n")
            elif cmd[0] == "Q":
                f.write("BYE\n")
                f.flush()
                return
            f.flush()
        conn.close()


if __name__ == "__main__":
    main()
