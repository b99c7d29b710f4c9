"""io's validity rules: when a figure fio reported is not to be trusted as a storage figure.

Pure functions over the recorded rows (``rows.jsonl``, one per fio job and direction) and
the targets recorded in ``experiment.json``; :func:`validity` is stored by
:mod:`gridbench.io.metrics` as ``metrics["validity"]`` and shown by the report (a table and
a headline warning). docs/io.md ("Validity rules") explains each rule.

- **short_runtime**: fio times a job in whole milliseconds and computes kB/s from that run
  time, so a job that ran a few ms has a throughput quantised in steps of 1 ms / runtime
  (a 32 MiB file written in 6–7 ms gives two possible kB/s values, 15% apart). A figure
  is flagged when that resolution is coarser than :data:`MAX_RESOLUTION` (1%: a run
  time under 100 ms).
- **cached_write**: a write timed without O_DIRECT (cache mode ``drop_caches`` or
  ``none``) and without fsync inside the timing (``include_flush: false``) ends when the
  kernel has copied the data into the page cache; the figure is the cache's speed, not the
  storage's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.family import ValidityRule
from gridbench.hosts.sampling.compared import CLIENT_BOUND_RULE
from gridbench.io.resilience_analysis import FAULT_LATE, HOST_LOST, INTEGRITY_CACHED
from gridbench.schema import validity_document

#: fio's run-time resolution: the ``runtime`` of its JSON output is whole milliseconds.
FIO_RUNTIME_RESOLUTION_S = 0.001
#: The coarsest relative resolution of a throughput figure that is not flagged (1%).
MAX_RESOLUTION = 0.01
#: The shortest run time that passes: 1 ms / 1% = 100 ms.
MIN_RUNTIME_S = FIO_RUNTIME_RESOLUTION_S / MAX_RESOLUTION

SHORT_RUNTIME = "short_runtime"
CACHED_WRITE = "cached_write"

IO_VALIDITY_RULES: tuple[ValidityRule, ...] = (
    ValidityRule(
        SHORT_RUNTIME,
        f"a fio figure timed over less than {MIN_RUNTIME_S * 1000:.0f} ms is flagged: fio "
        f"times jobs in whole milliseconds, so its kB/s is then coarser than "
        f"{MAX_RESOLUTION:.0%} (resolution = 1 ms / run time).",
    ),
    ValidityRule(
        CACHED_WRITE,
        "a write timed without O_DIRECT (cache mode drop_caches or none) and without fsync in "
        "the timing (include_flush: false) is flagged: it measured the page cache, not the "
        "storage.",
    ),
    ValidityRule(
        FAULT_LATE,
        "resilience: a fault applied more than 1 s after its planned time is flagged: the "
        "throughput and latency around it describe another moment of the load.",
    ),
    ValidityRule(
        INTEGRITY_CACHED,
        "resilience: an integrity read-back that could not drop the page cache first is "
        "flagged: it may have verified the client's cache rather than the servers.",
    ),
    ValidityRule(
        HOST_LOST,
        "clients: a client host lost mid-run (its fio server gone or unreachable) is "
        "flagged: the figures of that step lack it, and it took no further part.",
    ),
    CLIENT_BOUND_RULE,  # applied with the samples (gridbench.hosts.sampling.compared)
)

Row = Mapping[str, Any]
_Key = tuple[str, str, str, int, str]  # kind, target, test, clients, direction


def resolution(runtime_s: float) -> float | None:
    """The relative resolution of a throughput timed over ``runtime_s`` by fio (1 ms /
    run time, a fraction); None for a run time of 0 (no resolution at all)."""
    if runtime_s <= 0:
        return None
    return FIO_RUNTIME_RESOLUTION_S / runtime_s


def _groups(rows: Sequence[Row]) -> dict[_Key, list[Row]]:
    out: dict[_Key, list[Row]] = defaultdict(list)
    for r in rows:
        if r.get("kind") not in ("iozone", "concurrency", "replay"):
            continue
        if not isinstance(r.get("runtime_s"), int | float):
            continue
        clients = r.get("clients")
        key = (
            str(r.get("kind")),
            str(r.get("target")),
            str(r.get("test")),
            clients if isinstance(clients, int) else 1,
            str(r.get("direction", "")),
        )
        out[key].append(r)
    return out


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def runtimes(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per (kind, target, test, clients, direction): the shortest and longest run time
    (ms) over the repetitions and clients, and the resolution of the shortest."""
    out = []
    for (kind, target, test, clients, direction), rs in _groups(rows).items():
        times = [float(r["runtime_s"]) for r in rs]
        shortest = min(times)
        out.append(
            {
                "kind": kind,
                "target": target,
                "test": test,
                "clients": clients,
                "direction": direction,
                "runtime_ms": _ms(shortest),
                "runtime_ms_max": _ms(max(times)),
                "resolution": resolution(shortest),
                "rows": len(rs),
                "short_rows": sum(1 for t in times if t < MIN_RUNTIME_S),
            }
        )
    return out


def short_runtime_flags(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """A flag per group of rows (see :func:`runtimes`) with a run time under
    :data:`MIN_RUNTIME_S`, with the numbers."""
    flags = []
    for g in runtimes(rows):
        if not g["short_rows"]:
            continue
        lo, hi, res = g["runtime_ms"], g["runtime_ms_max"], g["resolution"]
        span = f"{lo:g} ms" if lo == hi else f"{lo:g}–{hi:g} ms"
        good = (
            "no throughput can be computed from a run time of 0 ms"
            if res is None
            else f"kB/s is only good to {res:.1%}"
        )
        flags.append(
            {
                "rule": SHORT_RUNTIME,
                **g,
                "limit": MAX_RESOLUTION,
                "detail": (
                    f"timed over {span} ({g['short_rows']} of {g['rows']} runs under "
                    f"{MIN_RUNTIME_S * 1000:.0f} ms): at fio's 1 ms resolution {good} "
                    f"(limit {MAX_RESOLUTION:.0%}); use a larger file_size"
                ),
            }
        )
    return flags


def cached_write_flags(
    rows: Sequence[Row], targets: Sequence[Mapping[str, Any]], *, include_flush: bool
) -> list[dict[str, Any]]:
    """A flag per group of write rows on a target whose recorded cache mode is not
    ``direct`` when the flush was not timed (``include_flush`` false). A target whose mode
    was not recorded is not judged."""
    if include_flush:
        return []
    used = {
        str(t.get("name")): str(t.get("cache_used"))
        for t in targets
        if isinstance(t, Mapping) and t.get("cache_used") is not None
    }
    flags = []
    for (kind, target, test, clients, direction), rs in _groups(rows).items():
        mode = used.get(target)
        if direction != "write" or mode is None or mode == "direct":
            continue
        if all(r.get("sync") is True for r in rs):  # O_SYNC replays wait for the storage
            continue
        flags.append(
            {
                "rule": CACHED_WRITE,
                "kind": kind,
                "target": target,
                "test": test,
                "clients": clients,
                "direction": direction,
                "rows": len(rs),
                "cache_used": mode,
                "detail": (
                    f"written through the page cache (cache mode {mode}: no O_DIRECT) and "
                    "no fsync in the timing (include_flush: false): the figure is how fast "
                    "the kernel took the data, not the storage; use cache: direct or "
                    "include_flush: true"
                ),
            }
        )
    return flags


def validity(
    rows: Sequence[Row],
    targets: Sequence[Mapping[str, Any]] = (),
    *,
    include_flush: bool = False,
) -> dict[str, Any]:
    """``metrics["validity"]``: ``valid`` (no flag raised), the ``flags`` of every rule,
    the ``rules`` applied and the ``runtimes`` behind the short-runtime rule."""
    flags = short_runtime_flags(rows) + cached_write_flags(
        rows, targets, include_flush=include_flush
    )
    return validity_document(
        flags,
        IO_VALIDITY_RULES,
        max_resolution=MAX_RESOLUTION,
        runtimes=runtimes(rows),
    )
