"""Dotted paths into metrics documents ('latency.overall.p99'): the one path grammar of
thresholds, outliers, comparisons and history, for every benchmark family."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PathError(KeyError):
    """A path does not name a value; ``str()`` explains which part is missing."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _key(cur: Mapping[Any, Any], parts: list[str], i: int) -> str | None:
    """The key at ``parts[i]``: the part itself, else the shortest run of parts from ``i``,
    joined by dots, that is a key (io target names may hold dots: ``nfs.v4``)."""
    for j in range(i + 1, len(parts) + 1):
        key = ".".join(parts[i:j])
        if key in cur:
            return key
    return None


def resolve(obj: Any, path: str) -> Any:
    """The value at ``path`` (dot-separated keys; list items by integer index)."""
    cur = obj
    parts = path.split(".")
    done: list[str] = []
    while len(done) < len(parts):
        part = parts[len(done)]
        if isinstance(cur, Mapping):
            key = _key(cur, parts, len(done))
            if key is None:
                known = ", ".join(sorted(str(k) for k in cur)) or "none"
                at = ".".join(done) or "the top level"
                raise PathError(f"no '{part}' under {at} (known: {known})")
            cur = cur[key]
            done.extend(key.split("."))
            continue
        if isinstance(cur, list) and part.lstrip("-").isdigit():
            i = int(part)
            if not -len(cur) <= i < len(cur):
                raise PathError(f"index {i} out of range under {'.'.join(done)}")
            cur = cur[i]
        else:
            raise PathError(f"'{'.'.join(done)}' is a value, it has no '{part}'")
        done.append(part)
    return cur


def number(value: Any) -> float | None:
    """A numeric value (booleans as 0/1), or ``None`` when it is not a number."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None
