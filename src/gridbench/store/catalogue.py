"""The catalogue: every experiment under a results root, newest first."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.store.layout import EXPERIMENT_FILE, RunDir


def list_runs(root: Path) -> list[dict[str, Any]]:
    """Catalogue entries (experiment.json plus ``path``) of every run under ``root``. A run
    folder that is a symbolic link is not one: it would list (and serve) files from
    outside the root. A run whose experiment.json cannot be trusted is listed with
    ``status`` "unreadable: <reason>" (and the reason alone in ``error``), so that one bad
    run never hides the rest of the store."""
    if not root.is_dir():
        return []
    out = []
    for p in root.iterdir():
        if not _is_run(p):
            continue
        try:
            entry = RunDir(p).read_experiment()
        except ResultsError as exc:
            entry = unreadable_entry(p, exc)
        entry["path"] = str(p)
        entry.setdefault("id", p.name)
        out.append(entry)
    out.sort(key=lambda e: str(e.get("created", "")), reverse=True)
    return out


def unreadable_entry(p: Path, exc: ResultsError) -> dict[str, Any]:
    """The catalogue row of a run whose experiment.json is damaged or hostile: its folder
    name, and the reason as its status."""
    return {
        "id": p.name,
        "name": p.name,
        "status": f"unreadable: {exc.message}",
        "error": exc.message,
    }


def _is_run(p: Path) -> bool:
    """A run folder of the root: a real directory (no link) holding experiment.json."""
    try:
        return not p.is_symlink() and (p / EXPERIMENT_FILE).is_file()
    except OSError:  # a name too long for the file system, a folder we may not read
        return False


def _is_file(p: Path) -> bool:
    """``p.is_file()``, False (not an OSError) for a path too long to be one."""
    try:
        return p.is_file()
    except OSError:
        return False


#: the longest file name the file systems gridbench runs on allow (NAME_MAX), in bytes
NAME_MAX_BYTES = 255


def is_run_name(ref: str) -> bool:
    """Whether ``ref`` can name a folder right under a results root: one file name (no
    ``/``, ``\\`` or NUL, not ``.`` or ``..``), valid UTF-8, at most 255 bytes. Checked
    before a name from outside (a URL, a link, an argument) reaches :class:`Path`: a longer
    one makes every look-up an OSError rather than "not found"."""
    if not ref or ref in (".", "..") or any(c in ref for c in "/\\\0"):
        return False
    try:
        return len(ref.encode("utf-8")) <= NAME_MAX_BYTES
    except UnicodeEncodeError:  # a lone surrogate (a URL's %ED%A0%80)
        return False


def find_run(root: Path, ref: str) -> RunDir | None:
    """A run inside ``root`` by its folder name or by the id recorded in its experiment.json
    (a unique prefix of either); never a path outside ``root``. The one lookup behind the
    CLI and the dashboard. A name that cannot be a folder's (:func:`is_run_name`) finds
    nothing."""
    if not is_run_name(ref):
        return None
    if _is_run(root / ref):
        return RunDir(root / ref)
    runs = list_runs(root)
    exact = [r for r in runs if str(r.get("id")) == ref]
    if len(exact) == 1:
        return RunDir(Path(exact[0]["path"]))
    matches = [
        r for r in runs if str(r["id"]).startswith(ref) or Path(r["path"]).name.startswith(ref)
    ]
    if len(matches) == 1:
        return RunDir(Path(matches[0]["path"]))
    return None


def resolve_run(ref: str, root: Path) -> RunDir:
    """A run from a path, an id under ``root`` (see :func:`find_run`), or ``latest``."""
    p = Path(ref)
    if "\0" not in ref and _is_file(p / EXPERIMENT_FILE):
        return RunDir(p)
    if ref == "latest":
        newest = latest_run(root)
        if newest is not None:
            return newest
    else:
        found = find_run(root, ref)
        if found is not None:
            return found
    raise ResultsError(
        f"no results directory {ref!r}",
        where=str(root),
        fix="give a path, an id from 'gridbench list', or 'latest'",
    )


_STAMP = re.compile(r"^(\d{8}T\d{6}Z)")


def _arrived(p: Path) -> float:
    """When a run folder came to be, by what a file cannot claim: the time stamp gridbench
    put in its name (``RunDir.create``), never later than the folder's status change time,
    which the kernel sets (a planted folder cannot date itself into the future)."""
    ctime = p.stat().st_ctime
    m = _STAMP.match(p.name)
    if m is None:
        return ctime
    try:
        stamped = datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:  # digits that are no date (month 13)
        return ctime
    return min(stamped.timestamp(), ctime)


def latest_run(root: Path) -> RunDir | None:
    """The newest run folder of ``root``, by :func:`_arrived`; not by the ``created``
    field of its experiment.json, which whoever wrote the file chose."""
    if not root.is_dir():
        return None
    runs = [p for p in root.iterdir() if _is_run(p)]
    return RunDir(max(runs, key=_arrived)) if runs else None
