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

import asyncio
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gridbench.jobflow.backends.base import Staging, SubmitError
from gridbench.jobflow.backends.command.output import exit_reason
from gridbench.jobflow.backends.command.process import ClientStartError, ClientTimeout, PendingCall
from gridbench.jobflow.backends.command.template import TemplateError
from gridbench.jobflow.backends.command.transfer import transfer_attrs
from gridbench.jobflow.events.model import (
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_REJECTED,
    FAIL_SUBMIT_TIMEOUT,
)

_CHUNK = 1 << 20
_FILL = b"x" * _CHUNK


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


async def timed_upload(
    root: Path,
    name: str,
    sizes: list[int],
    call: Callable[[Path], PendingCall],
    ok_codes: frozenset[int],
) -> tuple[int, int, dict[str, Any]]:
    """Write the input under ``root``, run the upload ``call`` on it, timed, and remove the
    local copy: (start ns, end ns, what moved); SubmitError with the client's reason."""
    try:
        await asyncio.to_thread(write_inputs, root, name, sizes)
        running = call(root)
    except OSError as exc:
        why = f"cannot write the job's input under {root}: {exc.strerror or exc}"
        raise SubmitError(FAIL_SUBMIT_ERROR, f"upload: {why}") from None
    except TemplateError as exc:
        raise SubmitError(FAIL_SUBMIT_ERROR, f"upload template: {exc}") from None
    try:
        t0 = time.time_ns()  # the wall clock, as the tracker's client stamps
        try:
            res = await running
        except ClientStartError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"upload template: {exc}") from None
        except ClientTimeout as exc:
            raise SubmitError(FAIL_SUBMIT_TIMEOUT, f"upload template: {exc}") from None
        t1 = time.time_ns()
        if res.exit_code not in ok_codes:
            raise SubmitError(FAIL_SUBMIT_REJECTED, f"upload template: {exit_reason(res)}")
        return t0, t1, transfer_attrs(t0, t1, root, "")
    finally:
        shutil.rmtree(root, ignore_errors=True)
