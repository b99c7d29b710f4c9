"""A timed transfer of the command backend (the input ``upload`` before submit, the output
``download`` after the job is done): its two client stamps, what it moved, and the job's
own directory under ``rdir`` it moves through."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from gridbench.jobflow.events.model import Event, Precision

STAGE_DOWNLOAD_START = "download_start"
STAGE_DOWNLOADED = "downloaded"
STAGE_UPLOAD_START = "upload_start"
STAGE_UPLOADED = "uploaded"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def job_dir(rdir: str, kind: str, name: str) -> Path:
    """One job's directory for a transfer (``kind``: upload or download), named after
    gridbench's job name."""
    return Path(rdir) / kind / _UNSAFE.sub("_", name)[:120]


def tree_size(root: Path) -> tuple[int, int]:
    """(bytes, files) of the regular files under ``root`` (no link followed)."""
    total = files = 0
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            try:
                st = os.lstat(os.path.join(dirpath, n))
            except OSError:
                continue
            if not os.path.islink(os.path.join(dirpath, n)):
                total += st.st_size
                files += 1
    return total, files


def transfer_attrs(t0_ns: int, t1_ns: int, root: Path, error: str) -> dict[str, Any]:
    """What one timed transfer moved: the bytes and files under ``root``, bytes ÷ its
    time, and the error that cut it short (if any)."""
    size, files = tree_size(root)
    dur_s = max(t1_ns - t0_ns, 1) / 1e9
    attrs: dict[str, Any] = {"bytes": size, "files": files, "rate_bps": size / dur_s}
    if error:
        attrs["error"] = error
    return attrs


def transfer_events(
    bid: str, stages: tuple[str, str], t0_ns: int, t1_ns: int, attrs: dict[str, Any]
) -> list[Event]:
    """The two client stamps (1 µs) of one transfer; the end carries its ``attrs``."""
    start, end = stages
    return [
        Event(bid, start, t0_ns, precision_ns=Precision.US),
        Event(bid, end, t1_ns, precision_ns=Precision.US, attrs=attrs),
    ]
