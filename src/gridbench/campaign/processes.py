"""The processes of a campaign's units: each ends with the campaign's process
(``PR_SET_PDEATHSIG``: a campaign killed with -9 leaves no unit running on) and leads a
session of its own (its process group is stopped as one); a process named in the log is
stopped only while it is still that process (its pid and its start time)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from gridbench.campaign.folder import Attempt
from gridbench.campaign.model import Unit

PR_SET_PDEATHSIG = 1
#: the environment variable naming the attempt a unit's process runs (and its campaign's)
UNIT_ENV = "GRIDBENCH_UNIT"
CAMPAIGN_ENV = "GRIDBENCH_CAMPAIGN"

#: where a campaign's run says what happens (a line at a time)
Say = Callable[[str], None]


def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - not Linux
        return None


_LIBC = _libc()


def die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    """In the unit's process, before exec: end (SIGTERM) when the campaign's process does."""
    if _LIBC is not None:
        with contextlib.suppress(Exception):
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def alive(pid: Any, create_time: Any) -> bool:
    """Whether the process ``pid`` that started at ``create_time`` still runs."""
    import psutil

    if type(pid) is not int or pid <= 0 or not isinstance(create_time, int | float):
        return False
    try:
        return bool(abs(psutil.Process(pid).create_time() - float(create_time)) < 0.05)
    except (psutil.Error, OSError):
        return False


def is_unit(pid: Any, create_time: Any, unit: str) -> bool:
    """Whether ``pid`` is still the process of the unit's attempt ``unit`` that the log
    names: started at ``create_time`` and started by a campaign for that attempt (its
    environment says ``GRIDBENCH_UNIT``). The log is foreign input: a pid and start time
    planted there never make the campaign stop another process."""
    import psutil

    if not alive(pid, create_time):
        return False
    try:
        env = psutil.Process(pid).environ()
    except (psutil.Error, OSError):  # another user's process: not the campaign's
        return False
    return bool(env.get(UNIT_ENV) == unit)


def stop_group(pid: int, create_time: float | None, unit: str, grace_s: float = 10.0) -> None:
    """SIGTERM the process group of a unit's process (it leads its own session), then
    SIGKILL what is left after ``grace_s``; only while ``pid`` is still the process of
    the attempt ``unit`` (:func:`is_unit`)."""
    if not is_unit(pid, create_time, unit):
        return
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    while time.monotonic() < end and alive(pid, create_time):
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM as Ctrl-C while the campaign runs (the units stop, the log says so)."""

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@dataclass
class Running:
    """One repetition of a unit whose process runs."""

    unit: Unit
    attempt: Attempt
    proc: subprocess.Popen[bytes]
    log: IO[bytes]
    before: set[str]
    deadline: float | None
    timed_out: bool = False
    next_scan: float = 0.0
    stop_sent: float | None = None
