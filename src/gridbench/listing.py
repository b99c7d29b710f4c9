"""What ``gridbench list`` and the dashboard's list show of every run of a results root:
one summary row per run, kept in the store's index (:mod:`gridbench.store.index`), so
that a list reads the index and one file status per run, never each run's record.

A row holds the catalogue fields of experiment.json (id, name, status, created, verdict,
description, analysed), the run's family (``kind``) and what its family's catalogue says of it
(:class:`gridbench.family.CatalogueEntry`: target, variant, its own columns and search
text). A run whose record cannot be trusted is listed with status "unreadable: <reason>"
(:func:`gridbench.store.catalogue.unreadable_entry`); one of a family not installed here
says so in its variant.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from gridbench import __version__
from gridbench.errors import GridbenchError, ResultsError
from gridbench.family import ENTRY_POINT_GROUP, CatalogueColumn, family, kind_of
from gridbench.store.index import indexed_rows

#: experiment.json's fields a row keeps, as they are (each a string or null)
TEXT_FIELDS = ("id", "name", "status", "created", "verdict", "error")
#: the row's fields that the family's catalogue and the registry give (strings)
MADE_FIELDS = ("kind", "target", "variant", "description")


def summary(path: Path) -> dict[str, Any]:
    """The row of the run folder ``path``, from its experiment.json and its family."""
    from gridbench.store.catalogue import unreadable_entry
    from gridbench.store.layout import RunDir

    try:
        entry = RunDir(path).read_experiment()
    except ResultsError as exc:
        entry = unreadable_entry(path, exc)
    entry["path"] = str(path)
    entry.setdefault("id", path.name)
    row: dict[str, Any] = {k: entry[k] for k in TEXT_FIELDS if k in entry}
    row["kind"] = kind_of(entry)
    if entry.get("description") is not None:
        row["description"] = str(entry["description"])
    if isinstance(entry.get("analysed"), bool):
        row["analysed"] = entry["analysed"]
    try:
        found = family(row["kind"]).catalogue(entry)
    except GridbenchError as exc:  # a family not installed here, a record it refuses
        row.update(target="", variant=f"({exc.message})", columns=[], search=[])
        return row
    row.update(
        target=found.target,
        variant=found.variant,
        columns=[[c.heading, c.text, c.numeric] for c in found.columns],
        search=list(found.search),
    )
    return row


def valid_row(row: Any) -> bool:
    """Whether a row read back from the index (foreign input) has the shape
    :func:`summary` gives: every field of its type."""
    if not isinstance(row, dict):
        return False
    if any(row.get(k) is not None and not isinstance(row[k], str) for k in TEXT_FIELDS):
        return False
    if not all(isinstance(row.get(k, ""), str) for k in MADE_FIELDS):
        return False
    if not isinstance(row.get("analysed", False), bool):
        return False
    columns, search = row.get("columns"), row.get("search")
    if not isinstance(columns, list) or not isinstance(search, list):
        return False
    cells_ok = all(
        isinstance(c, list)
        and len(c) == 3
        and isinstance(c[0], str)
        and isinstance(c[1], str)
        and isinstance(c[2], bool)
        for c in columns
    )
    return cells_ok and all(isinstance(s, str) for s in search)


@functools.cache
def _stamp() -> str:
    """What made the rows: this gridbench and the families installed (with their
    packages' versions): another makes an index be rebuilt."""
    from importlib.metadata import entry_points

    installed = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        version = getattr(dist, "version", "") if dist is not None else ""
        installed.append(f"{ep.name}={ep.value}@{version}")
    return f"gridbench {__version__}; " + "; ".join(installed)


def catalogue(root: Path) -> list[dict[str, Any]]:
    """Every run of ``root`` as its row, with its ``path``, newest first (by the
    ``created`` its record states)."""
    rows = indexed_rows(root, summary, stamp=_stamp(), valid=valid_row)
    out = []
    for name, row in rows.items():
        shown = dict(row)
        shown["path"] = str(root / name)
        out.append(shown)
    out.sort(key=lambda e: str(e.get("created", "")), reverse=True)
    return out


def own_columns(row: dict[str, Any]) -> dict[str, CatalogueColumn]:
    """A row's family columns (job flow's trials) by heading."""
    return {h: CatalogueColumn(h, text, numeric) for h, text, numeric in row.get("columns", [])}
