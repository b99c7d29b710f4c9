"""Samples the CPU and RSS of named server processes (slurmctld, arched, ...) during a trial.

The seeds recorded the server's CPU and memory while a client sent it requests (the
XtreemOS CDA table); beside the client's own samples (:mod:`gridbench.jobflow.run.resources`) this
shows whether the client's cost per request is small beside the server's. The processes
are only read through psutil, never signalled. Names are looked up again at every sample,
so a daemon restarted during the trial is followed; a process that ends is written once as
``gone``, and sampling goes on without it.
"""

from __future__ import annotations

import csv
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from gridbench.errors import GridbenchError
from gridbench.store.safe_open import open_append

SERVER_RESOURCES_FILE = "server_resources.csv"
COLUMNS = ("t_ns", "label", "pid", "cpu_percent", "rss_bytes", "state")


@dataclass(frozen=True, slots=True)
class Target:
    """One spec entry: every process called ``name``, or the process ``pid``."""

    label: str
    name: str | None = None
    pid: int | None = None


def _names() -> dict[str, list[int]]:
    """Pids by process name, from one pass over the process table."""
    out: dict[str, list[int]] = {}
    for p in psutil.process_iter(["name"]):
        name = p.info.get("name")
        if isinstance(name, str):
            out.setdefault(name, []).append(p.pid)
    return out


def missing(targets: Sequence[Target]) -> list[str]:
    """A note for each target that matches no process now (for trial.json ``notes``)."""
    names = _names() if any(t.name is not None for t in targets) else {}
    notes = []
    for t in targets:
        if t.name is not None and t.name not in names:
            notes.append(
                f"server_processes: no process named {t.name!r} (label {t.label!r}) at the "
                "start of the trial; it is sampled if it appears (check the name psutil "
                "reports, e.g. with 'ps -eo comm')"
            )
        elif t.pid is not None and not psutil.pid_exists(t.pid):
            notes.append(
                f"server_processes: no process with pid {t.pid} (label {t.label!r}) at the "
                "start of the trial; it is recorded as gone"
            )
    return notes


class ServerMonitor:
    """A background thread writing ``t_ns,label,pid,cpu_percent,rss_bytes,state`` rows.

    ``cpu_percent`` is a share of one core (100 = one core busy) averaged since the
    previous sample; ``state`` is ``running``, or ``gone`` once for a process that ended.
    A process first seen at a sample is primed there and written from the next one, since
    psutil's first CPU reading has no interval to average over.
    """

    def __init__(self, path: Path, targets: Sequence[Target], interval_s: float = 0.5) -> None:
        self.path = path
        self.targets = tuple(targets)
        self.interval = interval_s
        self._stop = threading.Event()
        #: why nothing was sampled (the file could not be opened), else None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._loop, name="gridbench-server", daemon=True)
        self._procs: dict[tuple[str, int], psutil.Process] = {}
        self._gone_pids: set[tuple[str, int]] = set()
        self._first: tuple[int, list[tuple[str, int, float | None, int | None, str]]] = (0, [])

    def start(self) -> None:
        """Prime the CPU counters of the processes there now and start sampling (a pid
        already gone is written as such with the first rows)."""
        self._first = (time.time_ns(), self._sample())
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling (the file holds every sample taken so far)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _pids(self, names: dict[str, list[int]], t: Target) -> list[int]:
        if t.pid is not None:
            return [t.pid]
        return names.get(t.name or "", [])

    def _sample(self) -> list[tuple[str, int, float | None, int | None, str]]:
        """One row per process of each target: (label, pid, cpu %, rss, state)."""
        names = _names() if any(t.name is not None for t in self.targets) else {}
        rows: list[tuple[str, int, float | None, int | None, str]] = []
        seen: dict[tuple[str, int], psutil.Process] = {}
        for t in self.targets:
            for pid in self._pids(names, t):
                key = (t.label, pid)
                if key in self._gone_pids:
                    continue
                proc = self._procs.get(key)
                try:
                    if proc is None:
                        proc = psutil.Process(pid)
                        proc.cpu_percent(None)  # primes the counter: its reading is 0.0
                        proc.memory_info()
                        seen[key] = proc
                        continue
                    # a pid reused by another program is not the daemon we followed
                    if not proc.is_running():
                        raise psutil.NoSuchProcess(pid)
                    cpu = proc.cpu_percent(None)
                    rss = proc.memory_info().rss
                except psutil.NoSuchProcess:
                    rows.append((t.label, pid, None, None, "gone"))
                    self._gone_pids.add(key)
                    continue
                except psutil.Error:
                    if proc is not None:
                        seen[key] = proc
                    continue  # e.g. access denied for this sample: not a fact about the server
                seen[key] = proc
                rows.append((t.label, pid, cpu, rss, "running"))
        for key in set(self._procs) - set(seen) - self._gone_pids:
            # a name's process that no longer shows up under the name: it ended
            rows.append((key[0], key[1], None, None, "gone"))
            self._gone_pids.add(key)
        self._procs = seen
        return rows

    def _loop(self) -> None:
        try:
            fh = open_append(self.path, binary=False)
        except (GridbenchError, OSError) as exc:  # a link or a FIFO planted there
            self.error = f"the server processes not sampled: {exc}"
            logging.getLogger(__name__).warning("%s", self.error)
            return
        with fh:
            w = csv.writer(fh, lineterminator="\n")
            if fh.tell() == 0:
                w.writerow(COLUMNS)
            t_ns, rows = self._first
            while True:
                for label, pid, cpu, rss, state in rows:
                    w.writerow(
                        [
                            t_ns,
                            label,
                            pid,
                            "" if cpu is None else f"{cpu:.1f}",
                            "" if rss is None else rss,
                            state,
                        ]
                    )
                fh.flush()
                if self._stop.wait(self.interval):
                    break
                t_ns, rows = time.time_ns(), self._sample()
