"""Processes that are the system under test, not the client.

A backend that starts its grid as child processes (the reference grid) registers their
pids here; the runner's resource monitor (:mod:`gridbench.jobflow.run.resources`) leaves them and
their descendants out of the client's CPU and RSS samples. Both sides import this module,
so a backend never imports the runner.
"""

from __future__ import annotations

_PIDS: set[int] = set()


def exclude_pid(pid: int) -> None:
    """Leave ``pid`` and its descendants out of the client's samples."""
    _PIDS.add(pid)


def excluded_pids() -> frozenset[int]:
    """The pids registered with :func:`exclude_pid` so far."""
    return frozenset(_PIDS)
