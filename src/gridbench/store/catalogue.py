"""The catalogue: every experiment under a results root, newest first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.store.layout import EXPERIMENT_FILE, RunDir


def list_runs(root: Path) -> list[dict[str, Any]]:
    """Catalogue entries (experiment.json plus ``path``) of every run under ``root``. A run
    folder that is a symbolic link is not one: it would list (and serve) files from
    outside the root."""
    if not root.is_dir():
        return []
    out = []
    for p in root.iterdir():
        if not _is_run(p):
            continue
        try:
            entry = RunDir(p).read_experiment()
        except ResultsError as exc:
            entry = {"name": p.name, "status": "unreadable", "error": exc.message}
        entry["path"] = str(p)
        entry.setdefault("id", p.name)
        out.append(entry)
    out.sort(key=lambda e: str(e.get("created", "")), reverse=True)
    return out


def _is_run(p: Path) -> bool:
    """A run folder of the root: a real directory (no link) holding experiment.json."""
    return not p.is_symlink() and (p / EXPERIMENT_FILE).is_file()


def find_run(root: Path, ref: str) -> RunDir | None:
    """A run inside ``root`` by its folder name or by the id recorded in its experiment.json
    (a unique prefix of either); never a path outside ``root``. The one lookup behind the
    CLI and the dashboard."""
    if not ref or "/" in ref or "\\" in ref or ref in (".", ".."):
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
    if (p / EXPERIMENT_FILE).is_file():
        return RunDir(p)
    if ref == "latest":
        runs = list_runs(root)
        if runs:
            return RunDir(Path(runs[0]["path"]))
    else:
        found = find_run(root, ref)
        if found is not None:
            return found
    raise ResultsError(
        f"no results directory {ref!r}",
        where=str(root),
        fix="give a path, an id from 'gridbench list', or 'latest'",
    )
