"""The store's index: one small summary row per run of a results root, kept in
``ROOT/.index.json``, so that listing a large store reads one file and a status per run
rather than every run's record.

Each row is remembered with the status of the run's experiment.json when it was made
(modification and change times in ns, size, inode): a run whose record changed since, or
that is new, is summarised again; one that is gone is dropped. The index is foreign input
like everything in the store (read bounded, no link followed, every entry checked) and
only a cache: missing, damaged, hostile, made by another gridbench or for other families
(``stamp``), it is rebuilt; a root gridbench may not write is listed without it. A root of
fewer than :data:`INDEX_FROM` runs is read directly and left as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError, ResultsError
from gridbench.store.safe_open import EXPERIMENT_FILE, MiB, parse_json, read_store_text

INDEX_FILE = ".index.json"
#: the index's format; a file of another is rebuilt
INDEX_FORMAT = "gridbench.index/1"
#: the largest index read (some 200 bytes a run: far above any store's)
INDEX_CAP = 64 * MiB
#: from how many runs a root keeps an index: below, reading each record costs little
INDEX_FROM = 32

#: what identifies one state of a run's experiment.json
Key = tuple[int, int, int, int]


def run_folders(root: Path) -> dict[str, Key]:
    """The run folders of ``root`` (a real folder, no link, holding experiment.json, as
    :func:`gridbench.store.catalogue.list_runs` takes them), each with the status key of
    its experiment.json."""
    found: dict[str, Key] = {}
    try:
        entries = list(os.scandir(root))
    except OSError:
        return found
    for entry in entries:
        try:
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                continue
            st = os.stat(os.path.join(entry.path, EXPERIMENT_FILE))
        except OSError:  # no record, a name too long, a folder we may not read
            continue
        if stat.S_ISREG(st.st_mode):
            found[entry.name] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    return found


def _read(path: Path, stamp: str) -> dict[str, Any]:
    """The index's runs (folder name -> {"key", "row"}), or {} when it is missing,
    damaged, hostile or made for another ``stamp``."""
    try:
        doc = parse_json(read_store_text(path, cap=INDEX_CAP, base=path.parent), path)
    except (FileNotFoundError, ResultsError):
        return {}
    if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT:
        return {}
    runs = doc.get("runs")
    if doc.get("stamp") != stamp or not isinstance(runs, dict):
        return {}
    return runs


def _key(value: Any) -> Key | None:
    """A remembered status key, checked (four integers), or None."""
    if not isinstance(value, list) or len(value) != 4:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return (value[0], value[1], value[2], value[3])


def indexed_rows(
    root: Path,
    summarize: Callable[[Path], dict[str, Any]],
    *,
    stamp: str,
    valid: Callable[[Any], bool],
) -> dict[str, dict[str, Any]]:
    """Each run folder of ``root`` (by name) with its summary row: from the index when
    the run's experiment.json is as it was when the row was made and the row is
    ``valid``, else ``summarize(run_folder)`` (then the index is written again, when
    ``root`` holds :data:`INDEX_FROM` runs or more). ``stamp`` names what made the rows
    (gridbench's version, the families installed): an index of another is rebuilt."""
    folders = run_folders(root)
    big = len(folders) >= INDEX_FROM
    path = root / INDEX_FILE
    known = _read(path, stamp) if big else {}
    rows: dict[str, dict[str, Any]] = {}
    fresh: dict[str, Any] = {}
    changed = len(known) != len(folders)
    for name, key in folders.items():
        kept = known.get(name)
        kept = kept if isinstance(kept, dict) else {}
        row = kept.get("row")
        if isinstance(row, dict) and _key(kept.get("key")) == key and valid(row):
            rows[name] = row
        else:
            rows[name] = summarize(root / name)
            changed = True
        fresh[name] = {"key": list(key), "row": rows[name]}
    if big and changed:
        _write(path, {"format": INDEX_FORMAT, "stamp": stamp, "runs": fresh})
    return rows


def _write(path: Path, doc: Mapping[str, Any]) -> None:
    """Write the index through a temporary file and a rename; a root that refuses (read
    only, full, a planted link) is listed without one."""
    from gridbench.store.layout import write_text_atomic

    with contextlib.suppress(OSError, GridbenchError):
        write_text_atomic(path, json.dumps(doc, separators=(",", ":")))
