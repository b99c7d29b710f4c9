"""Processes a run recorded as its own, recognised again by pid and start time.

A pid in a results folder is foreign input: the run may be old, copied in, or planted, and
the pid may since belong to someone else. A recorded process is taken to be the one the
run started only when its start time matches the one recorded at spawn time, so cleanup
never signals a process that gridbench did not start.
"""

from __future__ import annotations

import math

import psutil

#: a recorded start time matches within this many seconds
TIME_TOLERANCE = 0.01


def _start_time(created: object) -> float | None:
    if isinstance(created, bool) or not isinstance(created, int | float):
        return None
    value = float(created)
    return value if math.isfinite(value) else None


def recorded_process(pid: object, created: object) -> tuple[psutil.Process | None, str]:
    """The live process ``pid`` if it started at ``created`` (seconds since the epoch, as
    recorded at spawn time); else None and why not, in a few words."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        return None, f"no valid pid ({pid!r})"
    started = _start_time(created)
    try:
        proc = psutil.Process(pid)
        actual = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None, "already gone"
    except psutil.NoSuchProcess:
        return None, "already gone"
    except (psutil.Error, OverflowError, ValueError) as exc:
        return None, f"cannot inspect ({exc})"
    if started is None:
        return None, "no start time recorded: not provably ours"
    if abs(actual - started) > TIME_TOLERANCE:
        return None, "not ours (a different process has this pid)"
    return proc, ""


def live_runner(pid: object, created: object, files_made: float | None) -> int | None:
    """The pid of the gridbench process still running a run, if it seems to be.

    With a recorded start time it must match. An older run without one: a process started
    after the run's files were written (``files_made``) cannot be its runner.
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        return None
    try:
        proc = psutil.Process(pid)
        actual = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
    except (psutil.Error, OverflowError, ValueError):
        return None
    started = _start_time(created)
    if started is not None:
        return pid if abs(actual - started) <= TIME_TOLERANCE else None
    if files_made is not None and actual > files_made + 1.0:
        return None
    return pid
