"""The raw files a run wrote, recorded at its end so that analysis can tell lost data from
a small result.

A run records ``raw_files`` (relative name → size in bytes) in experiment.json as it
ends. Analysis refuses a run whose recorded file is gone or shorter than recorded: an
analysis of what is left would overwrite metrics.json with a valid-looking smaller (or
empty) result. Runs recorded before this (or killed before their end) carry no list;
their family checks the one file it cannot do without (:func:`require`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from gridbench.errors import ResultsError
from gridbench.store.layout import RunDir

KEY = "raw_files"
_FIX = "restore it from a backup, or re-run; the run's metrics.json was left as it was"


def record(run: RunDir, names: Iterable[str]) -> None:
    """Record the size of each of ``names`` (relative to the run folder) that exists."""
    sizes: dict[str, int] = {}
    for name in names:
        path = run.path / name
        if path.is_file() and not path.is_symlink():
            sizes[name] = path.stat().st_size
    run.update_experiment(**{KEY: sizes})


def in_folder(run: RunDir, folder: str) -> list[str]:
    """The regular files directly in ``folder`` of the run, as relative names."""
    root = run.path / folder
    if not root.is_dir():
        return []
    return sorted(f"{folder}/{p.name}" for p in root.iterdir() if p.is_file())


def _recorded(exp: Mapping[str, Any]) -> dict[str, int]:
    """The recorded list, keeping only plain relative names inside the run folder (the
    store is foreign input: a name never leads a check outside the run)."""
    raw = exp.get(KEY)
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, int] = {}
    for name, size in raw.items():
        p = PurePosixPath(str(name))
        if p.is_absolute() or ".." in p.parts or not p.parts:
            continue
        if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            out[str(name)] = size
    return out


def check(run: RunDir, exp: Mapping[str, Any]) -> None:
    """Refuse the run when a raw file it recorded is gone or shorter than recorded."""
    lost: list[tuple[str, str]] = []
    for name, size in sorted(_recorded(exp).items()):
        path = run.path / name
        if not path.is_file():
            lost.append((name, "is missing"))
        elif path.stat().st_size < size:
            have = path.stat().st_size
            lost.append((name, f"holds {have} of the {size} bytes the run wrote"))
    if lost:
        name, what = lost[0]
        more = f" (and {len(lost) - 1} more raw file(s))" if len(lost) > 1 else ""
        raise ResultsError(
            f"the run's raw data {name} {what}{more}: its results are lost",
            where=str(run.path / name),
            fix=_FIX,
        )


def require(run: RunDir, name: str, finished: bool) -> None:
    """For a run without a recorded list: refuse a finished run whose main raw file
    ``name`` is gone (it is created before the first result)."""
    path: Path = run.path / name
    if finished and not path.exists():
        raise ResultsError(
            f"the run's raw data {name} is missing: its results are lost",
            where=str(path),
            fix=_FIX,
        )
