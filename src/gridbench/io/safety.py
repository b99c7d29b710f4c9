"""Target safety: never '/', never a directory with data unless forced, enough free space,
every file inside the target's own work directory, and cleanup afterwards."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from gridbench.errors import GridbenchError
from gridbench.io import cache
from gridbench.io.model import IoSpec
from gridbench.units import format_size

#: Entries a fresh file system holds that do not count as "data".
IGNORED_ENTRIES = frozenset({"lost+found"})
#: Head room kept free on top of what the run writes.
FREE_SPACE_MARGIN = 1.10
WORKDIR_PREFIX = "gridbench-io-"


@dataclass(frozen=True)
class PreparedTarget:
    """A checked target: its resolved root and the work directory gridbench owns."""

    name: str
    root: Path
    workdir: Path


@dataclass
class TargetState:
    """A prepared target as a run uses it: the cache mode it got, its peer path and the
    notes its phases add."""

    prepared: PreparedTarget
    mode: cache.CacheMode
    peer: str | None
    notes: list[str] = field(default_factory=list)


def check_target(name: str, path: str, *, force: bool) -> Path:
    """The resolved target directory, or a GridbenchError saying why it is refused."""
    where = f"target {name!r} ({path})"
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = Path.cwd() / p
    try:
        real = p.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):
        raise GridbenchError(
            "the target directory does not exist",
            where=where,
            fix="create it (or mount the file system) first",
        ) from None
    if real == Path("/") or real == real.parent:
        raise GridbenchError(
            "refusing to benchmark the root directory '/'",
            where=where,
            fix="give a dedicated directory or mount point on the file system",
        )
    if not real.is_dir():
        raise GridbenchError("the target is not a directory", where=where, fix="give a directory")
    if not os.access(real, os.W_OK | os.X_OK):
        raise GridbenchError("the target is not writable", where=where, fix="check permissions")
    try:
        entries = [e for e in os.listdir(real) if e not in IGNORED_ENTRIES]
    except OSError as exc:
        raise GridbenchError(f"cannot list the target: {exc.strerror}", where=where) from None
    if entries and not force:
        raise GridbenchError(
            f"the target already holds data ({len(entries)} entries, e.g. {sorted(entries)[0]!r})",
            where=where,
            fix="use an empty directory, or set 'force: true' on the target (or --force); "
            "gridbench only writes inside its own gridbench-io-* subdirectory",
        )
    return real


def target_problems(spec: IoSpec) -> list[str]:
    """Why 'io run' on this host would refuse each of ``spec``'s targets (its own ``force``
    counted; free space is not, as it depends on the moment): one line per refused target,
    its reason and fix."""
    problems = []
    for t in spec.targets:
        try:
            check_target(t.name, t.path, force=t.force)
        except GridbenchError as exc:
            fix = f"\n  fix: {exc.fix}" if exc.fix else ""
            problems.append(f"{exc.where}: {exc.message} ('io run' here refuses it){fix}")
    return problems


def check_free_space(name: str, root: Path, needed: int) -> int:
    """Free bytes at ``root``; GridbenchError when fewer than ``needed`` × margin."""
    st = os.statvfs(root)
    free = st.f_bavail * st.f_frsize
    want = int(needed * FREE_SPACE_MARGIN)
    if free < want:
        raise GridbenchError(
            f"not enough free space: the run writes up to {format_size(needed)} "
            f"(+10% margin), {format_size(free)} is free",
            where=f"target {name!r} ({root})",
            fix="free space, or lower iozone.file_size / concurrency.clients",
        )
    return free


def make_workdir(name: str, root: Path, run_id: str) -> PreparedTarget:
    """Create the work directory ``ROOT/gridbench-io-RUNID`` (gridbench writes nowhere else)."""
    wd = root / f"{WORKDIR_PREFIX}{run_id}"
    try:
        wd.mkdir(mode=0o755)
    except FileExistsError:
        raise GridbenchError(
            "the work directory already exists",
            where=str(wd),
            fix="remove it; it is left from an earlier run with the same id",
        ) from None
    except OSError as exc:
        raise GridbenchError(
            f"cannot create the work directory: {exc.strerror}", where=str(wd)
        ) from None
    return PreparedTarget(name, root, wd)


def inside(path: Path, workdir: Path) -> Path:
    """``path`` if it lies inside ``workdir`` (after resolving '..'), else an error: the
    last guard before anything is written."""
    rp = Path(os.path.normpath(path))
    if rp != workdir and workdir not in rp.parents:
        raise GridbenchError(
            "refusing to write outside the target's work directory",
            where=str(path),
            fix="this is a bug in gridbench; please report it",
        )
    return rp


def cleanup(target: PreparedTarget) -> str | None:
    """Remove the work directory; an error message instead of raising."""
    try:
        shutil.rmtree(target.workdir)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"could not remove {target.workdir}: {exc.strerror or exc}"
    return None
