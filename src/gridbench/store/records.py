"""A family's record files in a run (io's rows.jsonl, net's records.jsonl, ...): one JSON
object per line, appended and flushed to disk as each result exists, so a killed run
keeps everything it measured. Reading treats the file as foreign input.
(Job events have their own log: :mod:`gridbench.events`.)"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.store.safe_open import CAPS, parse_json, read_store_text, refuse_links


def append_record(path: Path, obj: Any) -> None:
    """Append one JSON line and fsync it (results survive a crash); never through a link."""
    refuse_links(path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_records(path: Path) -> list[dict[str, Any]]:
    """The objects of one record file; a missing file holds none, a bad line is an error
    naming file and line. Read through :mod:`gridbench.store.safe_open` (no link, bounded,
    strict UTF-8, hostile JSON refused)."""
    try:
        text = read_store_text(path, cap=CAPS["records"])
    except FileNotFoundError:
        return []
    fix = "a crash may have cut the line: delete it, then 'gridbench report RUN'"
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        obj = parse_json(line, f"{path}:{i}", fix=fix)
        if not isinstance(obj, dict):
            raise ResultsError("a line is not a JSON object", where=f"{path}:{i}", fix=fix)
        out.append(obj)
    return out
