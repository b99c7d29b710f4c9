"""The MUSCLE3 ping-pong: a real driver/mirror pair under muscle_manager --start-all."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from gridbench.messaging.transports.muscle import RECORDS, ROLE, PingpongPlan, muscle_pingpong

# A mirror that answers four messages, then fails the way a crashing submodel does.
_DYING_MIRROR = """
import sys
from libmuscle import Instance, Message
from ymmsl import Operator
inst = Instance({Operator.F_INIT: ['in'], Operator.O_F: ['out']})
n = 0
while inst.reuse_instance():
    m = inst.receive('in')
    n += 1
    if n > 4:
        print('mirror gives up after 4 messages', file=sys.stderr, flush=True)
        sys.exit(5)
    inst.send('out', Message(m.timestamp, None, m.data))
"""


class Book:
    """Collects what muscle_pingpong registers (as the runner's cleanup book does)."""

    def __init__(self) -> None:
        self.procs: list[tuple[subprocess.Popen[bytes], str]] = []

    def __call__(self, proc: subprocess.Popen[bytes], role: str) -> None:
        self.procs.append((proc, role))


def _explain(work: Path, records: list[dict[str, Any]]) -> str:
    from gridbench.messaging.transports.muscle import failure_context

    errors = [r["error"] for r in records if r.get("error")]
    return "\n".join(errors) or failure_context(work)


def test_pingpong_yields_one_record_per_test(tmp_path: Path) -> None:
    book = Book()
    sizes = [0, 1024, 65536]
    records = list(muscle_pingpong(PingpongPlan(tuple(sizes), 2, 3), tmp_path, 60.0, book))
    assert all(r["ok"] for r in records), _explain(tmp_path, records)
    assert [(r["size_bytes"], r["test"]) for r in records] == [
        (s, t) for s in sizes for t in (0, 1)
    ]
    for r in records:
        assert r["pattern"] == "pingpong"
        assert r["transport"] == "muscle3"
        assert r["env"] == "host"
        assert r["error"] is None
        assert len(r["rtt_ns"]) == 3
        assert all(isinstance(x, int) and x > 0 for x in r["rtt_ns"])
    # the records file holds the same lines, the manager was registered and finished
    assert len((tmp_path / RECORDS).read_text().splitlines()) == len(records)
    assert len(book.procs) == 1
    proc, role = book.procs[0]
    assert role == ROLE
    assert proc.poll() == 0
    assert (tmp_path / "run" / "muscle3_manager.log").stat().st_size > 0


def test_work_directory_can_be_reused(tmp_path: Path) -> None:
    # MUSCLE3 refuses a run directory whose instance directories exist; a second run in
    # the same work directory must still measure
    for _ in range(2):
        records = list(muscle_pingpong(PingpongPlan((8,), 1, 2), tmp_path, 60.0, Book()))
        assert [r["ok"] for r in records] == [True], _explain(tmp_path, records)


def test_failing_mirror_gives_error_records(tmp_path: Path) -> None:
    book = Book()
    records = list(
        muscle_pingpong(
            PingpongPlan((16, 32, 64), 2, 2),
            tmp_path,
            120.0,
            book,
            mirror_args=[
                "-c",
                "import sys; print('no mirror today', file=sys.stderr); sys.exit(3)",
            ],
        )
    )
    assert [(r["size_bytes"], r["test"], r["ok"]) for r in records] == [
        (16, 0, False),
        (32, 0, False),
        (64, 0, False),
    ]
    first = records[0]["error"]
    # found by the manager's exit, not by waiting out the timeout
    assert "muscle_manager exited with status 1" in first
    assert "no result" not in first
    assert "no mirror today" in first  # the mirror's stderr tail
    assert "not measured" in records[1]["error"]
    assert all(r["rtt_ns"] == [] for r in records)
    assert book.procs[0][0].poll() is not None


def test_mirror_dying_midway_keeps_what_was_measured(tmp_path: Path) -> None:
    # warm-up 1 + test 0 (2 round trips) = 3 messages; the 5th message kills the mirror
    records = list(
        muscle_pingpong(
            PingpongPlan((16, 32), 3, 2), tmp_path, 120.0, Book(), mirror_args=["-c", _DYING_MIRROR]
        )
    )
    assert [(r["size_bytes"], r["test"], r["ok"]) for r in records] == [
        (16, 0, True),
        (16, 1, False),
        (32, 0, False),
    ]
    assert len(records[0]["rtt_ns"]) == 2
    assert "mirror gives up after 4 messages" in records[1]["error"]


def _processes_with(marker: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmd:
            found.append(int(d.name))
    return found


def test_hung_mirror_is_stopped_after_the_timeout(tmp_path: Path) -> None:
    marker = f"time.sleep(600.{os.getpid()})"  # unique to this test run
    book = Book()
    records = list(
        muscle_pingpong(
            PingpongPlan((16, 32), 1, 1),
            tmp_path,
            4.0,
            book,
            mirror_args=["-c", f"import time; {marker}"],
        )
    )
    assert [(r["size_bytes"], r["ok"]) for r in records] == [(16, False), (32, False)]
    assert "no result from the MUSCLE3 pair within 4 s" in records[0]["error"]
    # the manager's whole session went: manager, agent and the hung mirror
    assert book.procs[0][0].poll() is not None
    # the mirror is signalled with its session; on a loaded machine its exit may take a
    # moment to show in /proc, so look for a bounded while
    deadline = time.monotonic() + 10.0
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(marker) == []


def test_generator_closed_early_stops_the_pair(tmp_path: Path) -> None:
    book = Book()
    gen = muscle_pingpong(PingpongPlan((16, 32), 50, 5), tmp_path, 60.0, book)
    first = next(gen)
    assert first["ok"], _explain(tmp_path, [first])
    gen.close()
    assert book.procs[0][0].poll() is not None
