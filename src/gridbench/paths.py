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


def resolve(obj: Any, path: str) -> Any:
    """The value at ``path`` (dot-separated keys; list items by integer index). A key may
    itself hold dots (an io target named ``nfs.v4``): where several runs of parts are
    keys, the shortest that leads to a value wins."""
    return _resolve(obj, path.split("."), [])


def _resolve(cur: Any, parts: list[str], done: list[str]) -> Any:
    if not parts:
        return cur
    part = parts[0]
    if isinstance(cur, Mapping):
        runs = [j for j in range(1, len(parts) + 1) if ".".join(parts[:j]) in cur]
        if not runs:
            known = ", ".join(sorted(str(k) for k in cur)) or "none"
            at = ".".join(done) or "the top level"
            raise PathError(f"no '{part}' under {at} (known: {known})")
        first: PathError | None = None
        for j in runs:  # backtrack: 'nfs' and 'nfs.v4' may both be keys
            try:
                return _resolve(cur[".".join(parts[:j])], parts[j:], [*done, *parts[:j]])
            except PathError as e:
                first = first or e
        assert first is not None
        raise first
    if isinstance(cur, list) and part.lstrip("-").isdigit():
        i = int(part)
        if not -len(cur) <= i < len(cur):
            raise PathError(f"index {i} out of range under {'.'.join(done)}")
        return _resolve(cur[i], parts[1:], [*done, part])
    raise PathError(f"'{'.'.join(done)}' is a value, it has no '{part}'")


def number(value: Any) -> float | None:
    """A numeric value (booleans as 0/1), or ``None`` when it is not a number."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None
