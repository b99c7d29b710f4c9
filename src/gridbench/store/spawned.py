"""Processes a run recorded as its own, recognised again by pid, start time and the run
folder in their environment.

A pid in a results folder is foreign input: the run may be old, copied in, or planted, and
the pid may since belong to someone else. A start time proves little (anyone can read a
victim's in /proc), so a run marks its own children: :func:`mark_run` puts the run folder's
path into the controller's environment as soon as the folder exists, every child inherits
it, and :func:`run_process` takes a recorded process to be the run's only when its start
time matches *and* its environment names this run folder, which only its parent could set.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import psutil

#: The variable that names, in every child's environment, the run folder it works for.
RUN_ENV = "GRIDBENCH_RUN"

#: a recorded start time matches within this many seconds
TIME_TOLERANCE = 0.01


def _start_time(created: object) -> float | None:
    if isinstance(created, bool) or not isinstance(created, int | float):
        return None
    value = float(created)
    return value if math.isfinite(value) else None


def recorded_process(pid: object, created: object) -> tuple[psutil.Process | None, str]:
    """The live process ``pid`` if it started at ``created`` (seconds since the epoch, as
    recorded at spawn time); else None and why not, in a few words."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        return None, f"no valid pid ({pid!r})"
    started = _start_time(created)
    try:
        proc = psutil.Process(pid)
        actual = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None, "already gone"
    except psutil.NoSuchProcess:
        return None, "already gone"
    except (psutil.Error, OverflowError, ValueError) as exc:
        return None, f"cannot inspect ({exc})"
    if started is None:
        return None, "no start time recorded: not provably ours"
    if abs(actual - started) > TIME_TOLERANCE:
        return None, "not ours (a different process has this pid)"
    return proc, ""


def live_runner(pid: object, created: object, files_made: float | None) -> int | None:
    """The pid of the gridbench process still running a run, if it seems to be.

    With a recorded start time it must match. An older run without one: a process started
    after the run's files were written (``files_made``) cannot be its runner.
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        return None
    try:
        proc = psutil.Process(pid)
        actual = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
    except (psutil.Error, OverflowError, ValueError):
        return None
    started = _start_time(created)
    if started is not None:
        return pid if abs(actual - started) <= TIME_TOLERANCE else None
    if files_made is not None and actual > files_made + 1.0:
        return None
    return pid


def mark_run(run_path: Path) -> None:
    """From now on every child of this process carries ``run_path`` (absolute) in its
    environment as :data:`RUN_ENV`: cleanup's proof that a process is this run's."""
    os.environ[RUN_ENV] = str(run_path.resolve())


def of_run(proc: psutil.Process, run_path: Path) -> bool:
    """Whether ``proc`` was started for ``run_path`` (its environment says so)."""
    try:
        return bool(proc.environ().get(RUN_ENV) == str(run_path.resolve()))
    except (psutil.Error, OSError):
        return False


def run_process(pid: object, created: object, run_path: Path) -> tuple[psutil.Process | None, str]:
    """The live process ``pid`` if it started at ``created`` and works for ``run_path``
    (:func:`of_run`); else None and why not, in a few words."""
    proc, why = recorded_process(pid, created)
    if proc is None:
        return None, why
    if proc.pid == os.getpid() or not of_run(proc, run_path):
        return None, NOT_THIS_RUN
    return proc, ""


#: Why a process whose start time matches is still left alone.
NOT_THIS_RUN = f"not provably this run's (no {RUN_ENV} of this run in its environment)"


def run_children(run_path: Path, key: str) -> dict[psutil.Process, str]:
    """This user's live processes whose environment names ``run_path`` (:func:`of_run`:
    only a child of that run's controller inherits it) and sets ``key`` (a role a child is
    started with), with that value; never this process. Found by environment, not command
    line (Dask may retitle a worker); other users' environments are unreadable: skipped."""
    want = str(run_path.resolve())
    found = {}
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if p.pid == os.getpid():
                continue
            env = p.environ()
            if env.get(RUN_ENV) == want and key in env and p.status() != psutil.STATUS_ZOMBIE:
                found[p] = env[key]
    return found


def wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Those of ``procs`` still running after up to ``timeout_s``; a zombie is gone (its
    parent, not us, reaps it: ``psutil.wait_procs`` would wait for it to the end)."""

    def running(p: psutil.Process) -> bool:
        with contextlib.suppress(psutil.Error):
            return bool(p.status() != psutil.STATUS_ZOMBIE)
        return False

    deadline = time.monotonic() + timeout_s
    left = [p for p in procs if running(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if running(p)]
    return left


def owned_temp_dir(prefix: str) -> Path:
    """A new private temporary folder named ``<prefix><this pid>-<random>``: when this
    process is killed, :func:`sweep_orphaned` knows the folder as left behind."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))  # mode 0700


#: in a folder of :func:`owned_temp_dir`: the other processes that use it, one pid a line
HOLDERS_FILE = ".holders"


def add_holder(folder: Path, pid: int) -> None:
    """Record that process ``pid`` uses ``folder`` too (an embedded grid writing its
    reports there): :func:`sweep_orphaned` keeps the folder while it lives, even when the
    process that made the folder was killed."""
    with open(folder / HOLDERS_FILE, "a", encoding="ascii") as f:
        f.write(f"{pid}\n")


def _held(folder: Path) -> bool:
    try:
        text = (folder / HOLDERS_FILE).read_text(encoding="ascii", errors="replace")[:4096]
    except OSError:
        return False
    pids = (int(x) for x in text.split() if x.isdigit() and len(x) <= 9)
    return any(psutil.pid_exists(p) for p in pids)


def sweep_orphaned(prefix: str, tmp: Path | None = None) -> list[Path]:
    """Remove the folders made by :func:`owned_temp_dir` with ``prefix`` whose process is
    gone (a killed controller's keys or grid configuration), unless a holder of theirs
    (:func:`add_holder`) still runs; only this user's, never through a link. Returns what
    was removed."""
    removed = []
    for d in Path(tmp or tempfile.gettempdir()).glob(f"{prefix}*-*"):
        pid = d.name.removeprefix(prefix).split("-", 1)[0]
        try:
            st = d.lstat()
        except OSError:
            continue
        if not pid.isdigit() or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue  # not ours, or a link: never followed
        if psutil.pid_exists(int(pid)) or _held(d):
            continue  # its process, or one using it, still runs (or the pid was reused)
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed
