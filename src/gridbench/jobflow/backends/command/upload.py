"""The command backend's input upload as a timed stage (``upload``).

Before a job's submit call gridbench writes the job's input, ``job.input_size`` bytes
over ``job.input_files`` files (one when only the size is set), into a directory of its
own and runs the upload template on it (``{upload_dir}``). The template's time and the
bytes it was handed become the job's stamps ``upload_start`` and ``uploaded`` (client,
1 µs), the latter with bytes, files and rate_bps. A failed upload fails the submission:
the job would run without its input. Each file begins with the job's name on a line of
its own, so the job can check the input it reads is its own.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from gridbench.jobflow.backends.base import Staging

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_CHUNK = 1 << 20
_FILL = b"x" * _CHUNK


def upload_dir(rdir: str, name: str) -> Path:
    """A fresh directory for one job's input (named after gridbench's job name)."""
    return Path(rdir) / "upload" / _UNSAFE.sub("_", name)[:120]


def input_layout(staging: Staging | None) -> list[int]:
    """Each input file's size: ``input_bytes`` spread over ``input_files`` files (one
    file when only the size is given; none when neither is)."""
    size = (staging.input_bytes if staging else None) or 0
    files = staging.input_files if staging and staging.input_files is not None else None
    if files is None:
        files = 1 if size else 0
    if files == 0:
        return []
    each, extra = divmod(size, files)
    return [each + (1 if i < extra else 0) for i in range(files)]


def write_inputs(root: Path, name: str, sizes: list[int]) -> None:
    """``input-NNNNN.bin`` files of ``sizes`` bytes under a fresh ``root``, each the job's
    name and a newline (cut to the file's size), then filler."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    head = f"{name}\n".encode()
    for i, size in enumerate(sizes):
        with (root / f"input-{i:05d}.bin").open("wb") as fh:
            first = head[:size]
            fh.write(first)
            left = size - len(first)
            while left > 0:
                n = min(left, _CHUNK)
                fh.write(_FILL[:n])
                left -= n
