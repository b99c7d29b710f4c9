"""The sampling probe: a small psutil program, run on a host without node_exporter.

It imports only the standard library and psutil, so that its source alone can be handed
to a host's Python over SSH (``python -c SOURCE ARGS``; :mod:`gridbench.hosts.sampling.ssh`).
Every ``interval`` seconds it prints one JSON line: the host's counters (the fields of
:class:`gridbench.hosts.sampling.figures.Counters`, its own clock as ``host_t``) and the CPU
and RSS of each named process. It stops after ``lifetime`` seconds, when its output is
closed, or on SIGTERM/SIGHUP. The controller samples itself with the same :class:`Probe`.

Arguments: ``INTERVAL LIFETIME TARGETS_JSON`` with targets ``[{"label", "name"|"pid"}]``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import psutil

#: psutil's CPU modes that node_exporter reports too (guest time is inside user already)
MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def counters() -> dict[str, Any]:
    """The host's counters now, as JSON."""
    t = psutil.cpu_times()
    cpu = {m: float(getattr(t, m)) for m in MODES if hasattr(t, m)}
    mem = psutil.virtual_memory()
    try:
        load1: float | None = float(psutil.getloadavg()[0])
    except (OSError, AttributeError):
        load1 = None
    disk = psutil.disk_io_counters(perdisk=False)
    nics = psutil.net_io_counters(pernic=True)
    rx = sum(float(n.bytes_recv) for name, n in nics.items() if name != "lo")
    tx = sum(float(n.bytes_sent) for name, n in nics.items() if name != "lo")
    return {
        "cpu_seconds": cpu,
        "ncpu": psutil.cpu_count() or 1,
        "load1": load1,
        "mem_total": float(mem.total),
        "mem_available": float(mem.available),
        "disk_read": None if disk is None else float(disk.read_bytes),
        "disk_written": None if disk is None else float(disk.write_bytes),
        "net_rx": rx,
        "net_tx": tx,
        "host_t": time.time(),
    }


class Probe:
    """Named processes' CPU (percent of one core since the previous sample) and RSS.

    A process first seen at a sample is primed there and reported from the next one; a
    process that ends is reported once as ``gone``; names are looked up at every sample,
    so a restarted daemon is followed."""

    def __init__(self, targets: list[dict[str, Any]]) -> None:
        self.targets = targets
        self._procs: dict[tuple[str, int], psutil.Process] = {}
        self._gone: set[tuple[str, int]] = set()

    def _by_name(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        if any(t.get("name") is not None for t in self.targets):
            for p in psutil.process_iter(["name"]):
                name = p.info.get("name")
                if isinstance(name, str):
                    out.setdefault(name, []).append(p.pid)
        return out

    def processes(self) -> list[dict[str, Any]]:
        """One row per process of each target: label, pid, cpu_percent, rss_bytes, state."""
        names = self._by_name()
        rows: list[dict[str, Any]] = []
        seen: dict[tuple[str, int], psutil.Process] = {}
        for t in self.targets:
            label = str(t.get("label"))
            pid = t.get("pid")
            pids = [pid] if isinstance(pid, int) else names.get(str(t.get("name")), [])
            if not pids and not isinstance(pid, int):
                rows.append({"label": label, "pid": None, "state": "absent"})
            for p in pids:
                key = (label, p)
                if key in self._gone:
                    continue
                proc = self._procs.get(key)
                try:
                    if proc is None:
                        proc = psutil.Process(p)
                        proc.cpu_percent(None)
                        seen[key] = proc
                        continue
                    if not proc.is_running():
                        raise psutil.NoSuchProcess(p)
                    cpu = proc.cpu_percent(None)
                    rss = proc.memory_info().rss
                except psutil.NoSuchProcess:
                    rows.append({"label": label, "pid": p, "state": "gone"})
                    self._gone.add(key)
                    continue
                except psutil.Error:
                    if proc is not None:
                        seen[key] = proc
                    continue
                seen[key] = proc
                rows.append(
                    {
                        "label": label,
                        "pid": p,
                        "cpu_percent": cpu,
                        "rss_bytes": rss,
                        "state": "running",
                    }
                )
        for key in set(self._procs) - set(seen) - self._gone:
            rows.append({"label": key[0], "pid": key[1], "state": "gone"})
            self._gone.add(key)
        self._procs = seen
        return rows

    def sample(self) -> dict[str, Any]:
        """One line's object: the counters and the processes."""
        return {"counters": counters(), "processes": self.processes() if self.targets else []}


def main(argv: list[str]) -> int:
    """Print a sample every ``interval`` seconds for ``lifetime`` seconds."""
    import signal

    interval, lifetime = float(argv[0]), float(argv[1])
    targets = json.loads(argv[2]) if len(argv) > 2 else []

    def _stop(*_: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    probe = Probe(targets if isinstance(targets, list) else [])
    end = time.monotonic() + lifetime
    nxt = time.monotonic()
    while time.monotonic() < end:
        try:
            sys.stdout.write(json.dumps(probe.sample()) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            return 0
        nxt += interval
        time.sleep(max(0.0, nxt - time.monotonic()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
