"""Running fio: job files in, raw JSON+ out, with errors that name the fio command.

We never write an I/O engine of our own; fio does the I/O. A job is written as a fio job
file (kept in the results directory, so every figure can be reproduced by hand), fio runs
without a shell, and its JSON+ output is saved verbatim before it is parsed.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from gridbench.errors import BackendError, GridbenchError
from gridbench.io.model import IoSpec

#: Latency percentiles fio computes (total latency, submission to completion).
PERCENTILE_LIST = "50:90:99:99.9"

#: Seconds fio gets to end its jobs after SIGTERM.
STOP_GRACE_S = 15.0
ORPHAN_CHECK_S = 0.2  # how often a wait for fio's output checks that fio itself still runs

JobOptions = Mapping[str, str | int | bool]


@dataclass(frozen=True)
class FioJob:
    """One fio job section: ``name`` and its options (``rw``, ``bs``, ``size``, ...)."""

    name: str
    options: JobOptions


def _value(v: str | int | bool) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    s = str(v)
    # A newline or a section bracket would let a value inject job options.
    if any(c in s for c in "\n\r[]") or s != s.strip():
        raise GridbenchError(
            f"fio option value {s!r} contains a newline, a bracket or edge spaces",
            fix="use plain paths and values",
        )
    return s


def job_file_text(jobs: Sequence[FioJob], global_options: JobOptions) -> str:
    """The text of a fio job file: one [global] section and one section per job."""
    lines = ["[global]"]
    lines += [f"{k}={_value(v)}" for k, v in global_options.items()]
    for job in jobs:
        lines.append(f"[{_value(job.name)}]")
        lines += [f"{k}={_value(v)}" for k, v in job.options.items()]
    return "\n".join(lines) + "\n"


def fio_argv(fio: str, job_file: Path, output: Path, clients: Sequence[str] = ()) -> list[str]:
    """The fio command line: JSON+ to ``output``; with ``clients`` fio's client mode sends
    the same job file to each ``fio --server`` (host or host,port), and asks them for no
    ETA (fio's client otherwise has every server work one out every 0.9 s, which a local
    fio writing to a file does not)."""
    argv = [fio, "--output-format=json+", f"--output={output}"]
    if not clients:
        return [*argv, str(job_file)]
    argv.append("--eta=never")
    for c in clients:
        argv += [f"--client={c}", str(job_file)]
    return argv


def find_fio(fio: str) -> str:
    """The fio binary's path, or a clear error naming what to install."""
    path = shutil.which(fio)
    if path is None:
        raise BackendError(
            f"fio binary {fio!r} not found on PATH (the command would be: "
            f"{fio} --output-format=json+ JOBFILE)",
            where="spec field 'fio'",
            fix="install fio (apt-get install fio) or give its path in the spec's 'fio' field",
        )
    return path


def run_fio(argv: list[str], *, timeout: float | None = None) -> str:
    """Run fio (no shell); return its stderr. Raise BackendError naming the command on
    failure, with the tail of what fio said."""
    cmd = shlex.join(argv)
    try:
        proc = subprocess.Popen(
            _tied(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        raise BackendError(
            "fio binary not found", where=cmd, fix="install fio (apt-get install fio)"
        ) from None
    try:
        out, err = _communicate(proc, argv, timeout)
    except subprocess.TimeoutExpired:
        _stop(proc, argv)
        raise BackendError(
            f"fio did not finish within {timeout:.0f} s",
            where=cmd,
            fix="use a smaller file_size, or check that the target still responds",
        ) from None
    except BaseException:  # Ctrl-C: fio must not outlive us
        _stop(proc, argv)
        raise
    if proc.returncode != 0:
        said = " | ".join((err + out).strip().splitlines()[-4:])
        raise BackendError(
            f"fio failed (exit {proc.returncode}): {said or 'no message'}",
            where=cmd,
            fix=_fix_for(said),
        )
    return err


def _communicate(
    proc: subprocess.Popen[str], argv: list[str], timeout: float | None
) -> tuple[str, str]:
    """fio's output once it ends. When fio itself dies (a kill -9) its job processes (each
    in a session of its own) are left waiting for it for ever, holding the pipes: they are
    killed, or the run hung until the time-out (found by the fault matrix)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout or 0)
        try:
            return proc.communicate(timeout=min(ORPHAN_CHECK_S, left or ORPHAN_CHECK_S))
        except subprocess.TimeoutExpired:
            if proc.poll() is not None:
                _kill_orphans(argv)


def _kill_orphans(argv: list[str]) -> None:
    """SIGKILL the job processes a dead fio left: forked, not exec'd, they carry its exact
    command line, whose ``--output=`` names this run's own raw file."""
    for p in psutil.process_iter(["cmdline"]):
        if p.info["cmdline"] == argv:
            with contextlib.suppress(psutil.Error):
                p.kill()


def _tied(argv: list[str]) -> list[str]:
    """``argv`` run so that fio gets SIGTERM (and ends its job processes) when the thread
    that started it dies, even by kill -9: without it fio kept writing to the target until
    done (found by the fault matrix). util-linux's setpriv sets PR_SET_PDEATHSIG and execs
    fio; a preexec_fn would run Python between fork and exec, where a Ctrl-C breaks it."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", *argv] if setpriv else argv


def _stop(proc: subprocess.Popen[str], argv: list[str]) -> None:
    """Stop fio gracefully: SIGTERM lets it end its forked job processes (a SIGKILL to
    the main process would orphan them, still doing I/O); SIGKILL, to it and its job
    processes, only if it hangs or is already gone."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.communicate(timeout=STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    _kill_orphans(argv)  # the job processes fio left
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=STOP_GRACE_S)


def _fix_for(said: str) -> str:
    low = said.lower()
    if "engine" in low and ("load" in low or "dlopen" in low):
        return "the ioengine is not available in this fio build; use psync or libaio"
    if "invalid argument" in low or "o_direct" in low:
        return "the target may not support O_DIRECT: set cache: drop_caches or cache: none"
    if "no space" in low:
        return "the target is full: free space or use a smaller file_size"
    if "connect" in low:
        return "start 'fio --server' on the client host and check the address"
    return "run the command by hand to see fio's full output"


#: fio's default time limit: this floor rate for the data a run moves, plus a fixed allowance.
FLOOR_RATE_BPS = 2**20
TIMEOUT_BASE_S = 120.0


def fio_timeout(spec: IoSpec, bytes_moved: int) -> float:
    """Seconds one fio run may take: ``fio_timeout`` from the spec, else 120 s plus the
    time to move its data at 1 MiB/s (a target slower than that is broken, not slow)."""
    if spec.fio_timeout is not None:
        return spec.fio_timeout
    return TIMEOUT_BASE_S + bytes_moved / FLOOR_RATE_BPS
