"""Running one scheduler client program (sbatch, qstat, ...): no shell, bounded in time.

Shared by the backends that drive a scheduler through its CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench.errors import BackendError
from gridbench.jobflow.backends import spawn
from gridbench.jobflow.backends.base import SubmitError
from gridbench.jobflow.events.model import FAIL_SUBMIT_AUTH, FAIL_SUBMIT_ERROR, FAIL_SUBMIT_TIMEOUT


@dataclass(frozen=True, slots=True)
class CliResult:
    """Exit code and decoded output of one client call."""

    rc: int
    out: str
    err: str


async def run_cli(
    argv: Sequence[str], env: Mapping[str, str], timeout_s: float, user: str | None = None
) -> CliResult:
    """Run ``argv`` (as the Unix ``user`` when given: needs root); kill it on time-out or
    cancellation (TimeoutError / OSError propagate; an unknown user is a ValueError)."""
    if user is None and spawn.available():
        rc, out_b, err_b = await spawn.spawn_capture(argv, env, timeout_s)
        return CliResult(rc, out_b.decode(errors="replace"), err_b.decode(errors="replace"))
    # changing user needs Popen's setuid in the child, which posix_spawn cannot do
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        **as_user(user),
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


# a JWT: base64url header (always '{"' -> "eyJ"), payload and signature
_JWT_VALUE = re.compile(r"^eyJ[\w-]*\.[\w-]+\.[\w-]*$")


def scrub_secrets(env: Mapping[str, str], names: Sequence[str] = ()) -> dict[str, str]:
    """``env`` for a child process without credentials: the variables named, ``SLURM_JWT``
    (Slurm's clients switch to JWT auth when it is set, and sbatch copies it into jobs),
    and any variable whose value is a JWT (another user's token, say)."""
    drop = {"SLURM_JWT", *names}
    return {k: v for k, v in env.items() if k not in drop and not _JWT_VALUE.match(v)}


def as_user(user: str | None) -> dict[str, Any]:
    """Popen arguments that run a child as ``user`` with its own groups and home."""
    if user is None:
        return {}
    import pwd

    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        raise ValueError(f"there is no Unix user {user!r} on this host") from None
    groups = [g for g in os.getgrouplist(pw.pw_name, pw.pw_gid) if g != pw.pw_gid]
    cwd = pw.pw_dir if Path(pw.pw_dir).is_dir() else "/tmp"
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": groups, "cwd": cwd}


async def submit_call(call: Awaitable[CliResult], program: str, timeout_s: float) -> CliResult:
    """Await a submitting client call; no answer or no program becomes a SubmitError."""
    try:
        return await call
    except TimeoutError:
        raise SubmitError(
            FAIL_SUBMIT_TIMEOUT, f"{program} gave no answer within {timeout_s:g}s"
        ) from None
    except PermissionError as exc:
        raise SubmitError(
            FAIL_SUBMIT_AUTH, f"cannot run {program} as the job's account: {exc}"
        ) from None
    except OSError as exc:
        raise SubmitError(FAIL_SUBMIT_ERROR, f"cannot run {program}: {exc}") from None
    except ValueError as exc:  # an unknown account
        raise SubmitError(FAIL_SUBMIT_AUTH, f"cannot run {program}: {exc}") from None


async def checked_call(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout_s: float,
    *,
    where: str,
    fix_reach: str,
    fix_install: str,
) -> CliResult:
    """Run a status or cancel client: no answer in time, or no program to run, is the
    backend's failure (a BackendError naming ``where`` and the fix), not a job's."""
    try:
        return await run_cli(argv, env, timeout_s)
    except TimeoutError:
        raise BackendError(
            f"{argv[0]} gave no answer within {timeout_s:g}s", where=where, fix=fix_reach
        ) from None
    except OSError as exc:
        raise BackendError(f"cannot run {argv[0]}: {exc}", where=where, fix=fix_install) from None
