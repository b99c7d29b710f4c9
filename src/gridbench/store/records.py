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


def append_record(path: Path, obj: Any) -> None:
    """Append one JSON line and fsync it (results survive a crash)."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_records(path: Path) -> list[dict[str, Any]]:
    """The objects of one record file; a missing file holds none, a bad line is an error
    naming file and line."""
    if not path.exists():
        return []
    out = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError, ValueError) as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:200]
                raise ResultsError(
                    f"not valid JSON: {msg}",
                    where=f"{path}:{i}",
                    fix="a crash may have cut the line: delete it, then 'gridbench report RUN'",
                ) from None
            if not isinstance(obj, dict):
                raise ResultsError("a line is not a JSON object", where=f"{path}:{i}")
            out.append(obj)
    return out
