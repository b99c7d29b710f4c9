"""The dashboard's view of the results store: one run resolver (the CLI's) and the
family columns of each catalogue entry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError
from gridbench.family import CatalogueColumn, family, kind_of
from gridbench.listing import own_columns
from gridbench.store.catalogue import find_run
from gridbench.store.layout import EXPERIMENT_FILE, RunDir

#: what a run reference from a URL may look like (never a path)
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


def resolve_in_root(root: Path, rid: str) -> RunDir | None:
    """The run ``rid`` found as the CLI finds it (:func:`~gridbench.store.catalogue.find_run`:
    by folder name or by the id recorded in experiment.json), and only a direct child of
    the root (a planted symlink to elsewhere is not one)."""
    if not RUN_ID.match(rid):
        return None
    run = find_run(root, rid)
    if run is None:
        return None
    try:
        inside = run.path.resolve().parent == root.resolve()
    except OSError:
        return None
    return run if inside and (run.path / EXPERIMENT_FILE).is_file() else None


def catalogued(entry: dict[str, Any]) -> dict[str, Any]:
    """A catalogue entry with its family (``kind``), the family's list columns
    (``target``, ``variant``) and its own columns by heading (``family_columns``: job
    flow's trials); a run of a family not installed here says so."""
    entry["kind"] = kind_of(entry)
    entry["family_columns"] = {}
    try:
        columns = family(entry["kind"]).catalogue(entry)
    except GridbenchError as exc:
        entry["target"], entry["variant"] = "", f"({exc.message})"
        return entry
    entry["target"], entry["variant"] = columns.target, columns.variant
    entry["family_columns"] = {c.heading: c for c in columns.columns}
    return entry


def listed(row: dict[str, Any]) -> dict[str, Any]:
    """A row of the store's list (:func:`gridbench.listing.catalogue`: the run's summary,
    never its record) as :func:`catalogued` gives an entry: its family's own columns by
    heading (``family_columns``)."""
    return {**row, "family_columns": own_columns(row)}


def list_columns(entries: list[dict[str, Any]]) -> list[CatalogueColumn]:
    """The families' own columns of the list (as :func:`catalogued` entries hold them),
    each heading once, in the order they first appear: none when no listed run's family
    has any."""
    seen: dict[str, CatalogueColumn] = {}
    for e in entries:
        for heading, col in e.get("family_columns", {}).items():
            seen.setdefault(heading, col)
    return list(seen.values())
