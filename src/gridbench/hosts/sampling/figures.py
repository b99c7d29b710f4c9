"""A host's counters at one instant and the figures two of them give (pure arithmetic).

Both sources hand the same :class:`Counters`: node_exporter's ``/metrics``
(:mod:`gridbench.hosts.sampling.exporter`) and the psutil probe started over SSH
(:mod:`gridbench.hosts.sampling.probe`). :func:`rates` turns two of them into the host-wide
figures of the interval between: CPU by mode as a share of all CPUs, load1, memory, disk
and network bytes per second. A counter that went backwards (a reboot, a device gone)
gives no rate rather than a negative one.

Trouble is data, never a traceback: a :class:`Problem` has a stable ``code`` (named
warnings: ``exporter-malformed``, ``exporter-down``, ...) and a sentence for people.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The CPU modes counted as idle; every other mode is busy.
IDLE_MODES = frozenset({"idle", "iowait"})
#: CPU seconds a mode must lose for its counter to count as reset (a reboot); Linux's
#: iowait may step back a little on its own (proc(5)), which only drops that interval's CPU
CPU_BACK_S = 1.0


@dataclass(frozen=True, slots=True)
class Problem:
    """A named warning: ``code`` is stable (tests and reports match it), ``text`` says
    what happened and what to do."""

    code: str
    text: str


@dataclass(frozen=True, slots=True)
class Counters:
    """A host's cumulative counters and gauges at one instant (its own clock ``host_t``,
    seconds since the epoch, when the source gives it)."""

    cpu_seconds: Mapping[str, float]  # mode -> seconds summed over every CPU
    ncpu: int
    load1: float | None = None
    mem_total: float | None = None
    mem_available: float | None = None
    disk_read: float | None = None  # bytes since boot, every disk
    disk_written: float | None = None
    net_rx: float | None = None  # bytes since boot, every interface but loopback
    net_tx: float | None = None
    host_t: float | None = None
    #: the families the source gave values no counter or gauge can have (NaN, infinite,
    #: negative): left out above (None), and named in a warning
    bad: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The counters as plain JSON (what the probe prints)."""
        return {
            "cpu_seconds": dict(self.cpu_seconds),
            "ncpu": self.ncpu,
            "load1": self.load1,
            "mem_total": self.mem_total,
            "mem_available": self.mem_available,
            "disk_read": self.disk_read,
            "disk_written": self.disk_written,
            "net_rx": self.net_rx,
            "net_tx": self.net_tx,
            "host_t": self.host_t,
        }


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def counters_from_json(obj: Any) -> Counters | Problem:
    """Counters from a probe's JSON (foreign): every field checked, never trusted."""
    bad = Problem("probe-malformed", "the SSH probe printed counters that do not add up")
    if not isinstance(obj, dict):
        return bad
    cpu = obj.get("cpu_seconds")
    ncpu = obj.get("ncpu")
    if not isinstance(cpu, dict) or not isinstance(ncpu, int) or isinstance(ncpu, bool):
        return bad
    modes: dict[str, float] = {}
    for k, v in list(cpu.items())[:32]:
        n = _num(v)
        if not isinstance(k, str) or n is None or len(k) > 32:
            return bad
        modes[k] = n
    if not modes or not 1 <= ncpu <= 100_000:
        return bad
    if any(v < 0 for v in modes.values()):
        return bad
    keys = ("load1", "mem_total", "mem_available", "disk_read", "disk_written", "net_rx", "net_tx")
    vals = {k: _num(obj.get(k)) for k in keys}
    wrong = tuple(k for k in (*keys, "host_t") if _out_of_range(obj.get(k)))
    vals = {k: None if k in wrong else v for k, v in vals.items()}
    host_t = None if "host_t" in wrong else _num(obj.get("host_t"))
    return Counters(cpu_seconds=modes, ncpu=ncpu, host_t=host_t, bad=wrong, **vals)


def _out_of_range(v: Any) -> bool:
    """A number no counter or gauge can hold (a probe's NaN comes as a float, or as a
    huge literal JSON reads as infinite); a missing value is not out of range."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return not math.isfinite(float(v)) or v < 0


@dataclass(frozen=True, slots=True)
class Figures:
    """A host over one interval: CPU by mode (percent of all CPUs), CPU busy (every mode
    but idle and iowait), load1, memory (bytes), disk and network rates (bytes/s)."""

    interval_s: float
    cpu: dict[str, float] = field(default_factory=dict)
    cpu_busy: float | None = None
    load1: float | None = None
    mem_used: float | None = None
    mem_available: float | None = None
    mem_total: float | None = None
    disk_read_bps: float | None = None
    disk_write_bps: float | None = None
    net_rx_bps: float | None = None
    net_tx_bps: float | None = None
    #: the counters that went back since the previous sample (a reboot, a device gone):
    #: their rates are left out
    reset: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The figures as one flat JSON object (a sample record's body)."""
        return {
            "counters_reset": list(self.reset) or None,
            "interval_s": round(self.interval_s, 6),
            "cpu": {k: round(v, 3) for k, v in self.cpu.items()},
            "cpu_busy": _round(self.cpu_busy),
            "load1": self.load1,
            "mem_used": self.mem_used,
            "mem_available": self.mem_available,
            "mem_total": self.mem_total,
            "disk_read_bps": _round(self.disk_read_bps),
            "disk_write_bps": _round(self.disk_write_bps),
            "net_rx_bps": _round(self.net_rx_bps),
            "net_tx_bps": _round(self.net_tx_bps),
        }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _rate(a: float | None, b: float | None, dt: float) -> float | None:
    if a is None or b is None or b < a:
        return None
    return (b - a) / dt


def rates(prev: Counters, cur: Counters, dt: float | None = None) -> Figures | Problem:
    """The figures of the interval from ``prev`` to ``cur``. ``dt``: the interval in
    seconds (default: the hosts' own clocks, ``cur.host_t - prev.host_t``). CPU shares
    come from the CPU seconds themselves, so they need no clock."""
    if dt is None and prev.host_t is not None and cur.host_t is not None:
        dt = cur.host_t - prev.host_t
    if dt is None or not math.isfinite(dt) or dt <= 0:
        return Problem("no-interval", "two samples with no time between them: no rates")
    deltas = {
        m: cur.cpu_seconds.get(m, 0.0) - prev.cpu_seconds.get(m, 0.0) for m in cur.cpu_seconds
    }
    total = sum(deltas.values())
    cpu: dict[str, float] = {}
    busy: float | None = None
    went_back = any(d < -CPU_BACK_S for d in deltas.values()) or cur.ncpu != prev.ncpu
    if total > 0 and all(d >= -1e-6 for d in deltas.values()) and cur.ncpu == prev.ncpu:
        cpu = {m: max(0.0, 100.0 * d / total) for m, d in sorted(deltas.items())}
        busy = sum(v for m, v in cpu.items() if m not in IDLE_MODES)
    used = None
    if cur.mem_total is not None and cur.mem_available is not None:
        used = cur.mem_total - cur.mem_available
    return Figures(
        interval_s=dt,
        cpu=cpu,
        cpu_busy=busy,
        load1=cur.load1,
        mem_used=used,
        mem_available=cur.mem_available,
        mem_total=cur.mem_total,
        disk_read_bps=_rate(prev.disk_read, cur.disk_read, dt),
        disk_write_bps=_rate(prev.disk_written, cur.disk_written, dt),
        net_rx_bps=_rate(prev.net_rx, cur.net_rx, dt),
        net_tx_bps=_rate(prev.net_tx, cur.net_tx, dt),
        reset=(("cpu_seconds",) if went_back else ()) + _backwards(prev, cur),
    )


def _backwards(prev: Counters, cur: Counters) -> tuple[str, ...]:
    pairs = {
        "disk_read": (prev.disk_read, cur.disk_read),
        "disk_written": (prev.disk_written, cur.disk_written),
        "net_rx": (prev.net_rx, cur.net_rx),
        "net_tx": (prev.net_tx, cur.net_tx),
    }
    return tuple(k for k, (a, b) in pairs.items() if a is not None and b is not None and b < a)
