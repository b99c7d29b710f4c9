"""The probe (:mod:`gridbench.hosts.sampling.probe`) started on a host over SSH.

One asyncssh connection per host (the inventory's ``ssh`` options), the probe's source
handed to the host's Python with ``-c``; its output (foreign) is read in bounded chunks
and split into lines here, each checked before use. Nothing of the probe outlives the
connection: closing it ends the probe (and the probe ends itself after ``lifetime``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

from gridbench.hosts.sampling.figures import Problem

#: the longest line the probe may print (a line is a few hundred bytes)
MAX_LINE = 256 * 1024
PROBE_SOURCE = (Path(__file__).parent / "probe.py").read_text(encoding="utf-8")


def probe_command(
    python: str, interval: float, lifetime: float, targets: Sequence[dict[str, Any]]
) -> str:
    """The remote command line that runs the probe (quoted for the remote shell)."""
    return shlex.join(
        [python, "-c", PROBE_SOURCE, f"{interval:g}", f"{lifetime:g}", json.dumps(list(targets))]
    )


def split_lines(buf: bytes, chunk: bytes) -> tuple[list[bytes], bytes] | Problem:
    """Whole lines of ``buf + chunk`` and the rest; a line over :data:`MAX_LINE` is a
    Problem (pure)."""
    data = buf + chunk
    *lines, rest = data.split(b"\n")
    if len(rest) > MAX_LINE or any(len(x) > MAX_LINE for x in lines):
        return Problem("probe-malformed", f"the SSH probe printed a line over {MAX_LINE} bytes")
    return lines, rest


def parse_line(line: bytes) -> dict[str, Any] | Problem:
    """One probe line as an object (foreign: checked)."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return Problem(
            "probe-malformed", f"the SSH probe printed a line that is not JSON: {line[:80]!r}"
        )
    if not isinstance(obj, dict) or not isinstance(obj.get("counters"), dict):
        return Problem("probe-malformed", "the SSH probe printed an object without counters")
    return obj


#: the most process rows one line may carry (a spec names at most 256 targets)
MAX_PROCESS_ROWS = 1024
_STATES = frozenset({"running", "gone", "absent"})


def _figure(v: Any) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 1e18
    return float(v) if ok else None


def clean_processes(rows: Any) -> tuple[list[dict[str, Any]], int]:
    """A probe line's process rows (foreign), each cut to the fields the probe prints and
    checked (pure): the rows kept and how many were not rows of the probe's."""
    if not isinstance(rows, list):
        return [], 0 if rows is None else 1
    kept: list[dict[str, Any]] = []
    for r in rows[:MAX_PROCESS_ROWS]:
        if not isinstance(r, dict):
            continue
        label, pid, state = r.get("label"), r.get("pid"), r.get("state")
        if not isinstance(label, str) or not 0 < len(label) <= 64 or state not in _STATES:
            continue
        if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0):
            continue
        row = {"label": label, "pid": pid, "state": state}
        if state == "running":
            row["cpu_percent"] = _figure(r.get("cpu_percent"))
            row["rss_bytes"] = _figure(r.get("rss_bytes"))
        kept.append(row)
    return kept, len(rows) - len(kept)


async def probe_lines(
    address: str,
    ssh: dict[str, Any],
    python: str,
    interval: float,
    lifetime: float,
    targets: Sequence[dict[str, Any]],
    *,
    connect_timeout: float = 10.0,
) -> AsyncGenerator[dict[str, Any] | Problem, None]:
    """Each line the probe prints on ``address``, as it arrives; a Problem ends it (the
    connection refused, the probe failed to start or stopped, or its output was bad)."""
    import asyncssh

    try:
        conn = await asyncio.wait_for(asyncssh.connect(address, **ssh), connect_timeout)
    except (OSError, asyncssh.Error, TimeoutError, ValueError, TypeError, OverflowError) as exc:
        yield Problem(
            "ssh-failed", f"cannot reach {address} over SSH ({type(exc).__name__}: {exc})"
        )
        return
    try:
        proc = await conn.create_process(
            probe_command(python, interval, lifetime, targets), encoding=None
        )
        buf = b""
        while True:
            chunk = await proc.stdout.read(65536)
            if not chunk:
                break
            split = split_lines(buf, chunk)
            if isinstance(split, Problem):
                yield split
                return
            lines, buf = split
            for line in lines:
                if line.strip():
                    yield parse_line(line)
        err = (await asyncio.wait_for(proc.stderr.read(4096), 2.0)).decode(errors="replace")
        tail = err.strip().splitlines()[-1:] or ["no message"]
        yield Problem(
            "probe-stopped",
            f"the SSH probe on {address} stopped ({tail[0][:200]}); is psutil installed "
            f"for {python} there?",
        )
    except (OSError, asyncssh.Error, TimeoutError) as exc:
        yield Problem(
            "ssh-failed", f"the SSH probe on {address} failed ({type(exc).__name__}: {exc})"
        )
    finally:
        conn.close()
        with contextlib.suppress(TimeoutError, OSError, asyncssh.Error):
            await asyncio.wait_for(conn.wait_closed(), 5.0)
