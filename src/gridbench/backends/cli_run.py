"""Running one scheduler client program (sbatch, qstat, ...): no shell, bounded in time.

Shared by the backends that drive a scheduler through its CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass

from gridbench.backends.base import SubmitError
from gridbench.events.model import FAIL_SUBMIT_ERROR, FAIL_SUBMIT_TIMEOUT


@dataclass(frozen=True, slots=True)
class CliResult:
    """Exit code and decoded output of one client call."""

    rc: int
    out: str
    err: str


async def run_cli(argv: Sequence[str], env: Mapping[str, str], timeout_s: float) -> CliResult:
    """Run ``argv``; kill it on time-out or cancellation (TimeoutError / OSError propagate)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
    )
    try:
        async with asyncio.timeout(timeout_s):
            out, err = await proc.communicate()
    except BaseException:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await proc.wait()
        raise
    rc = proc.returncode if proc.returncode is not None else -1
    return CliResult(rc, out.decode(errors="replace"), err.decode(errors="replace"))


async def submit_call(call: Awaitable[CliResult], program: str, timeout_s: float) -> CliResult:
    """Await a submitting client call; no answer or no program becomes a SubmitError."""
    try:
        return await call
    except TimeoutError:
        raise SubmitError(
            FAIL_SUBMIT_TIMEOUT, f"{program} gave no answer within {timeout_s:g}s"
        ) from None
    except OSError as exc:
        raise SubmitError(FAIL_SUBMIT_ERROR, f"cannot run {program}: {exc}") from None
