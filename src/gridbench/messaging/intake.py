"""``RUN/records.jsonl`` read back as foreign input: every line must be a JSON object of a
known record kind (:mod:`gridbench.messaging.records`) with its fields of the right
types, or the analysis stops with one :class:`~gridbench.errors.ResultsError` naming the
file, the line and the fix. As io does, a malformed line is an error, not skipped: a crash
can cut the last line, and the fix says to delete it.

A record's identifying fields (transport, size, repetition ...) are always required; its
measured fields are required when ``ok`` is true and checked when present. A ``note``
needs only its ``text``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from gridbench.errors import ResultsError
from gridbench.store.records import read_records
from gridbench.store.safe_open import CAPS, read_store_text

FIX: Final = (
    "the file was edited, cut by a crash or written by another tool: delete or repair that "
    "line (or re-run the benchmark), then 'gridbench analyze RUN'"
)

#: A check returns None when the value is fine, else what is wrong with it.
Check = Callable[[Any], str | None]


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _text(v: Any) -> str | None:
    return None if isinstance(v, str) else "must be a string"


def _opt_text(v: Any) -> str | None:
    return None if v is None or isinstance(v, str) else "must be a string or null"


def _flag(v: Any) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _count(v: Any) -> str | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
    return None if ok else "must be a whole number >= 0"


def _num(v: Any) -> str | None:
    return None if _is_num(v) and v >= 0 else "must be a number >= 0"


def _opt_num(v: Any) -> str | None:
    return None if v is None else _num(v)


def _nums(v: Any) -> str | None:
    if not isinstance(v, list):
        return "must be a list of numbers"
    for i, x in enumerate(v):
        if not (_is_num(x) and x >= 0):
            return f"must be a list of numbers >= 0 (item {i} is {json.dumps(x)[:30]})"
    return None


def _stats(v: Any) -> str | None:
    if not isinstance(v, Mapping) or "mean" not in v:
        return "must be an object with at least 'mean' (ns)"
    for k, x in v.items():
        if x is not None and not (_is_num(x) and x >= 0):
            return f"must hold numbers >= 0 ('{k}' is {json.dumps(x)[:30]})"
    return None


def _one_of(*allowed: str) -> Check:
    def check(v: Any) -> str | None:
        return None if v in allowed else f"must be one of {', '.join(allowed)}"

    return check


COMMON: Final[dict[str, Check]] = {"env": _text, "ok": _flag}
#: per pattern: (identifying fields, measured fields)
FIELDS: Final[dict[str, tuple[dict[str, Check], dict[str, Check]]]] = {
    "pingpong": (
        {"transport": _text, "size_bytes": _count, "test": _count},
        {"rtt_ns": _nums},
    ),
    "echo": (
        {"transport": _text, "config": _text, "calls": _count, "rep": _count},
        {"lat_ns": _nums},
    ),
    "echo_scale": (
        {"transport": _text, "config": _text, "clients": _count, "rep": _count},
        {"lat_ns": _nums},
    ),
    "burst": (
        {"transport": _text, "calls": _count, "rep": _count},
        {"enqueue_ns": _num, "first_ns": _num, "arrival_ns": _nums},
    ),
    "transfer": (
        {
            "tool": _text,
            "direction": _one_of("up", "down"),
            "bytes": _count,
            "streams": _count,
            "rep": _count,
        },
        {"elapsed_ns": _num},
    ),
    "floor": ({"tool": _one_of("sockperf", "iperf3")}, {}),
    "rr": ({"tool": _one_of("sockperf", "iperf3"), "proto": _one_of("udp", "tcp")}, {}),
    "note": ({"text": _text}, {}),
}
#: checked wherever present (a failed floor may lack its size, a note names its subject)
OPTIONAL: Final[dict[str, Check]] = {
    "env": _text,
    "ok": _flag,
    "error": _opt_text,
    "transport": _text,
    "tool": _text,
    "size_bytes": _count,
    "samples": _count,
    "streams": _count,
    "direction": _one_of("up", "down"),
    "rtt_ns": _nums,
    "lat_ns": _nums,
    "client_mean_ns": _nums,
    "hosts": _count,
    "path": _text,
    "cohosted_lat_ns": _nums,
    "remote_lat_ns": _nums,
    "bits_per_second": _num,
    "seconds": _num,
    "enqueue_cpu_ns": _opt_num,
}
#: a measured floor needs its figure
FLOOR_MEASURED: Final[dict[str, dict[str, Check]]] = {
    "sockperf": {"size_bytes": _count, "rtt_ns": _stats},
    "iperf3": {"streams": _count, "direction": _one_of("up", "down"), "bits_per_second": _num},
}


def _fail(where: str, message: str) -> ResultsError:
    return ResultsError(message, where=where, fix=FIX)


def check_record(obj: Mapping[str, Any], where: str) -> None:
    """Raise ResultsError (at ``where``) unless ``obj`` is a well-typed net record."""
    pattern = obj.get("pattern")
    if pattern not in FIELDS:
        raise _fail(
            where,
            f"unknown record pattern {json.dumps(pattern)[:40]} (known: {', '.join(FIELDS)})",
        )
    ident, measured = FIELDS[str(pattern)]
    # a note is a sentence for the report: its environment and status are optional
    required = {**ident} if pattern == "note" else {**COMMON, **ident}
    if obj.get("ok") is True:
        required.update(measured)
        if pattern == "floor":
            required.update(FLOOR_MEASURED.get(str(obj.get("tool")), {}))
    for key, check in required.items():
        if key not in obj:
            raise _fail(where, f"{pattern} record has no {key!r}")
        problem = check(obj[key])
        if problem:
            raise _fail(where, f"{pattern} record: {key!r} {problem}")
    for key, check in OPTIONAL.items():
        if key in obj and key not in required and obj[key] is not None:
            problem = check(obj[key])
            if problem:
                raise _fail(where, f"{pattern} record: {key!r} {problem}")


def read_net_records(path: Path) -> list[dict[str, Any]]:
    """Every record of ``path`` (none when it is missing), each checked; ResultsError
    naming ``path:line`` for the first bad one. Read by the store's one reader of record
    files (no link followed, bounded, strict UTF-8, hostile JSON refused)."""
    records = read_records(path)
    for i, obj in enumerate(records):
        try:
            check_record(obj, f"{path}:{i + 1}")
        except ResultsError:
            # the reader skips blank lines: name the line a person opens
            check_record(obj, f"{path}:{_line_of(path, i)}")
            raise
    return records


def _line_of(path: Path, index: int) -> int:
    """The file line of the ``index``-th non-blank line."""
    text = read_store_text(path, cap=CAPS["records"])
    numbers = [i for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    return numbers[index] if index < len(numbers) else index + 1
