"""Samples the CPU and RSS of gridbench and its child processes during a trial.

A run in which the client itself was saturated measures the client, not the system, so
these samples feed the validity verdict (the UNICORE UCC finding, METHODS 1.5).
"""

from __future__ import annotations

import contextlib
import csv
import logging
import threading
import time
from pathlib import Path

import psutil

from gridbench.errors import GridbenchError
from gridbench.jobflow.backends.sut import excluded_pids
from gridbench.store.safe_open import open_append

RESOURCES_FILE = "resources.csv"


class ResourceMonitor:
    """A background thread writing ``t_ns,cpu_percent,rss_bytes,children`` rows."""

    def __init__(self, path: Path, interval_s: float = 0.5) -> None:
        self.path = path
        self.interval = interval_s
        self._stop = threading.Event()
        #: why nothing was sampled (the file could not be opened), else None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._loop, name="gridbench-resources", daemon=True)
        self._me = psutil.Process()
        self._children: dict[int, psutil.Process] = {}

    def start(self) -> None:
        self._me.cpu_percent(None)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _sample(self) -> tuple[float, int, int]:
        cpu = self._me.cpu_percent(None)
        rss = self._me.memory_info().rss
        alive: dict[int, psutil.Process] = {}
        try:
            kids = self._me.children(recursive=True)
        except psutil.Error:
            kids = []
        excluded = excluded_pids()  # child processes that are the system under test
        if excluded:
            skip = set(excluded)
            for k in kids:
                if k.pid in skip:
                    with contextlib.suppress(psutil.Error):
                        skip.update(c.pid for c in k.children(recursive=True))
            kids = [k for k in kids if k.pid not in skip]
        for k in kids:
            proc = self._children.get(k.pid, k)
            try:
                if k.pid not in self._children:
                    proc.cpu_percent(None)  # first call primes the counter
                else:
                    cpu += proc.cpu_percent(None)
                rss += proc.memory_info().rss
                alive[k.pid] = proc
            except psutil.Error:
                continue
        self._children = alive
        return cpu, rss, len(alive)

    def _loop(self) -> None:
        try:
            fh = open_append(self.path, binary=False)
        except (GridbenchError, OSError) as exc:  # a link or a FIFO planted there
            self.error = f"the client's CPU and memory not sampled: {exc}"
            logging.getLogger(__name__).warning("%s", self.error)
            return
        with fh:
            w = csv.writer(fh, lineterminator="\n")
            if fh.tell() == 0:
                w.writerow(["t_ns", "cpu_percent", "rss_bytes", "children"])
            while not self._stop.wait(self.interval):
                try:
                    cpu, rss, n = self._sample()
                except psutil.Error:
                    continue
                w.writerow([time.time_ns(), f"{cpu:.1f}", rss, n])
                fh.flush()
