"""The run folder a unit's process made in the results store: new since it started,
named after the unit's spec (``<stamp>-<name>``, ``-2`` …), a folder (never a link), and
no other attempt's."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence, Set
from datetime import UTC, datetime
from pathlib import Path

from gridbench.store.catalogue import is_run_name
from gridbench.store.layout import slug


def names(root: Path) -> set[str]:
    """Every name at the results root (none when it cannot be read)."""
    try:
        return {e.name for e in os.scandir(root)}
    except OSError:
        return set()


def stamp_of(iso: str) -> str | None:
    """An ISO time as a run folder's stamp (``YYYYmmddTHHMMSSZ``), or None."""
    try:
        return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    except (ValueError, OverflowError):
        return None


def find_run(
    root: Path,
    run_name: str,
    before: Set[str],
    claimed: Set[str],
    since: str | None = None,
) -> str | None:
    """The first run folder of ``run_name`` at ``root`` that is not among ``before`` (the
    names there when the unit started) or ``claimed`` (other attempts'), made no earlier
    than ``since``; None when there is none yet."""
    pattern = re.compile(rf"^(\d{{8}}T\d{{6}}Z)-{re.escape(slug(run_name))}(-\d+)?$")
    stamp = stamp_of(since) if since else None
    found = []
    for name in names(root) - before:
        m = pattern.match(name)
        if m is None or name in claimed:
            continue
        path = root / name
        if path.is_symlink() or not path.is_dir():  # a planted link is no unit's run
            continue
        if stamp is not None and m.group(1) < stamp:
            continue
        found.append(name)
    return min(found) if found else None


#: seconds ``gridbench cleanup`` of a killed attempt's run may take
CLEANUP_TIMEOUT_S = 120.0


def clean_up_killed(root: Path, run: str, argv0: Sequence[str], env: Mapping[str, str]) -> str:
    """A killed attempt's run handed to its family's ``gridbench cleanup RUN --yes`` (``argv0``
    the command line's start): its jobs cancelled, what it started stopped (an embedded grid
    outlives a controller killed with -9), the run marked; what came of it, for the log."""
    if not is_run_name(run):  # the log is foreign input: never a path of its choosing
        return f"its run {run!r} is not a run's name: not cleaned up"
    argv = [*argv0, "cleanup", str(root / run), "--yes"]
    try:
        p = subprocess.run(
            argv,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=CLEANUP_TIMEOUT_S,
            check=False,
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        return f"gridbench cleanup {run} did not end: {exc}"
    if p.returncode == 0:
        return f"its run {run} was cleaned up (gridbench cleanup)"
    said = (p.stderr.strip() or p.stdout.strip()).splitlines()
    return f"gridbench cleanup {run} failed (exit {p.returncode}): {said[-1] if said else ''}"
