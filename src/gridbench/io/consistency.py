"""Functional checks (METHODS 2.5): pass/fail results with timings.

- a file written through the target becomes visible, identical, through the peer path
  within the timeout (the delay is measured);
- rename and unlink become visible through the peer;
- mode, owner and mtime survive a copy and a backup-and-restore (tar) through the target;
- a full target gives a clear error and leaves existing files intact (opt-in, small
  file systems only).

Everything is written inside the target's work directory; the peer is only read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gridbench.io.model import ConsistencySpec
from gridbench.io.safety import PreparedTarget, inside

POLL_S = 0.02
#: A fixed past mtime (2001-09-09) so "survived" cannot be a coincidence of "now".
FIXED_MTIME = 1_000_000_000
TEST_MODE = 0o640
TEST_OWNER = (4321, 4321)


def _sha(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def _wait(cond: Callable[[], bool], timeout: float) -> float | None:
    """Seconds until ``cond()`` held, or None after ``timeout``."""
    t0 = time.monotonic()
    while True:
        if cond():
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(POLL_S)


def _result(name: str, ok: bool | None, seconds: float | None, detail: str) -> dict[str, Any]:
    """One check's result; ``ok`` None means "not run" (neither a pass nor a failure)."""
    return {"check": name, "ok": ok, "seconds": seconds, "detail": detail}


def _visibility(
    spec: ConsistencySpec, writer: Path, reader: Path, fence: Path, via: str
) -> list[dict[str, Any]]:
    """Create, overwrite, rename and unlink in ``writer``; time until ``reader`` (the same
    directory through the other path) shows each. ``fence`` bounds every write."""
    out = []

    def check(name: str, cond: Callable[[], bool], ok_text: str) -> None:
        delay = _wait(cond, spec.timeout)
        miss = f"not seen within {spec.timeout:g} s"
        seen = delay is not None  # 0.0 s is "seen at once", not "not seen"
        out.append(_result(f"{name} {via}", seen, delay, ok_text if seen else miss))

    data = os.urandom(spec.file_size)
    want = hashlib.sha256(data).hexdigest()
    src = inside(writer / "visible.bin", fence)
    with src.open("wb") as fh:
        fh.write(data)
    check("create visible", lambda: _sha(reader / "visible.bin") == want, "identical content")
    data2 = os.urandom(spec.file_size)
    want2 = hashlib.sha256(data2).hexdigest()
    with src.open("r+b") as fh2:  # same size, new bytes: a stale cache would still match size
        fh2.write(data2)
    check("overwrite visible", lambda: _sha(reader / "visible.bin") == want2, "new content seen")
    os.rename(src, inside(writer / "renamed.bin", fence))
    check(
        "rename visible",
        lambda: (reader / "renamed.bin").exists() and not (reader / "visible.bin").exists(),
        "new name present, old name gone",
    )
    os.unlink(inside(writer / "renamed.bin", fence))
    check("unlink visible", lambda: not (reader / "renamed.bin").exists(), "gone")
    return out


def visibility_checks(spec: ConsistencySpec, t: PreparedTarget, peer: Path) -> list[dict[str, Any]]:
    """Both directions: written through the target, read through the peer, and back.
    The reverse direction writes through the peer only into the work directory gridbench
    just created, and only once the peer shows it (proof that it is the same storage)."""
    wd = t.workdir
    pwd = peer / wd.name
    out = _visibility(spec, wd, pwd, wd, "target → peer")
    if _wait(pwd.is_dir, spec.timeout) is None:
        out.append(
            _result(
                "peer shows the work directory",
                False,
                None,
                f"{pwd} does not exist: is 'peer' the same storage as the target?",
            )
        )
        return out
    out += _visibility(spec, pwd, wd, pwd, "peer → target")
    return out


def _meta(p: Path) -> tuple[int, int, int, int]:
    st = p.stat()
    return (st.st_mode & 0o7777, st.st_uid, st.st_gid, int(st.st_mtime))


def _compare(
    name: str, want: tuple[int, int, int, int], got: tuple[int, int, int, int], secs: float
) -> dict[str, Any]:
    labels = ("mode", "uid", "gid", "mtime")
    lost = [
        f"{lab} {w if lab != 'mode' else oct(w)}→{g if lab != 'mode' else oct(g)}"
        for lab, w, g in zip(labels, want, got, strict=True)
        if w != g
    ]
    return _result(
        name,
        not lost,
        secs,
        "mode, owner and mtime kept" if not lost else "lost: " + ", ".join(lost),
    )


def metadata_checks(t: PreparedTarget, peer: Path | None) -> list[dict[str, Any]]:
    """mode/owner/mtime through copy and tar backup-and-restore, and as seen by the peer."""
    wd = t.workdir
    orig = inside(wd / "meta.orig", wd)
    orig.write_bytes(b"gridbench metadata check\n")
    os.chmod(orig, TEST_MODE)
    chown_note = ""
    if os.geteuid() == 0:
        try:
            os.chown(orig, *TEST_OWNER)
        except OSError as exc:
            chown_note = f" (chown refused: {exc.strerror})"
    os.utime(orig, (FIXED_MTIME, FIXED_MTIME))
    want = _meta(orig)
    out = []
    t0 = time.monotonic()
    copy = inside(wd / "meta.copy", wd)
    shutil.copy2(orig, copy)
    if os.geteuid() == 0:
        try:
            st = orig.stat()
            os.chown(copy, st.st_uid, st.st_gid)
        except OSError:
            pass
    out.append(_compare("metadata survives copy (cp -p)", want, _meta(copy), time.monotonic() - t0))
    t0 = time.monotonic()
    archive = inside(wd / "meta.tar", wd)
    with tarfile.open(archive, "w") as tar:
        tar.add(orig, arcname="meta.orig")
    restore = inside(wd / "restore", wd)
    restore.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(restore, filter="fully_trusted" if os.geteuid() == 0 else "tar")
    got = _meta(restore / "meta.orig")
    res = _compare("metadata survives backup and restore (tar)", want, got, time.monotonic() - t0)
    res["detail"] += chown_note
    out.append(res)
    if peer is not None:
        seen = peer / wd.name / "meta.orig"
        try:
            got = _meta(seen)
        except OSError as exc:
            out.append(
                _result("metadata seen through peer", False, None, f"cannot stat: {exc.strerror}")
            )
        else:
            out.append(_compare("metadata seen through peer", want, got, 0.0))
    return out


FILL_CHECK = "full target: clear error, no corruption"
FILL_CHUNK = 1024 * 1024
#: The fill stops at this multiple of the free blocks, or after the time a floor rate of
#: FILL_FLOOR_BPS needs for that (plus a minute), even if the file system never refuses.
FILL_FACTOR = 1.5
FILL_FLOOR_BPS = 2**20


def fill_until_refused(path: Path, limit: int, deadline_s: float) -> tuple[int, OSError | None]:
    """Write random 1 MiB chunks (zeros may be compressed or deduplicated away) to
    ``path`` until the file system refuses, ``limit`` bytes are written or ``deadline_s``
    seconds have passed: (bytes written, the refusal or None)."""
    written = 0
    t0 = time.monotonic()
    try:
        with path.open("wb") as fh:
            while written < limit and time.monotonic() - t0 < deadline_s:
                written += fh.write(os.urandom(min(FILL_CHUNK, limit - written)))
                fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return written, exc
    return written, None


def fill_check(spec: ConsistencySpec, t: PreparedTarget) -> dict[str, Any]:
    """Fill the target until it refuses; pass if the refusal is a clear ENOSPC/EDQUOT
    error and an existing file is unchanged afterwards. Only on a mount point with at
    most ``max_fill`` free; otherwise "not run" (ok None)."""
    wd = t.workdir
    if not os.path.ismount(t.root):
        return _result(
            FILL_CHECK,
            None,
            None,
            f"not run: {t.root} is not a mount point; give the small file system's mount "
            "point as the target",
        )
    st = os.statvfs(wd)
    free = st.f_bavail * st.f_frsize
    if free > spec.max_fill:
        return _result(
            FILL_CHECK,
            None,
            None,
            f"not run: {free / 2**20:.0f} MiB free is above max_fill "
            f"({spec.max_fill / 2**20:.0f} MiB); "
            "run it on a small file system",
        )
    keep = inside(wd / "precious.bin", wd)
    keep.write_bytes(os.urandom(64 * 1024))
    want = _sha(keep)
    filler = inside(wd / "filler.bin", wd)
    limit = int(FILL_FACTOR * st.f_bfree * st.f_frsize) + FILL_CHUNK
    t0 = time.monotonic()
    written, err = fill_until_refused(filler, limit, 60.0 + limit / FILL_FLOOR_BPS)
    secs = time.monotonic() - t0
    # appending to an existing file on a full disk must fail without damaging it
    try:
        with keep.open("ab") as fh:
            fh.write(os.urandom(FILL_CHUNK))
            fh.flush()
            os.fsync(fh.fileno())
        append_note = "append to an existing file succeeded"
    except OSError as exc:
        append_note = f"append refused: {exc.strerror}"
    filler.unlink(missing_ok=True)
    # the first 64 KiB must be unchanged (an append that got through may follow them)
    with keep.open("rb") as fh:
        intact = hashlib.sha256(fh.read(64 * 1024)).hexdigest() == want
    clear = err is not None and err.errno in (errno.ENOSPC, errno.EDQUOT)
    refusal = (
        f"error: {err.strerror} (errno {err.errno})"
        if err is not None
        else f"no error after {written / 2**20:.0f} MiB (the fill stopped at its limit)"
    )
    detail = f"{refusal}; {append_note}; existing file {'intact' if intact else 'CORRUPTED'}"
    return _result(FILL_CHECK, clear and intact, secs, detail)


def run_checks(spec: ConsistencySpec, t: PreparedTarget, peer: str | None) -> list[dict[str, Any]]:
    """Every check for one target (the peer checks only when a peer path is given)."""
    out: list[dict[str, Any]] = []
    peer_p = Path(peer) if peer else None
    if peer_p is not None:
        out += visibility_checks(spec, t, peer_p)
    out += metadata_checks(t, peer_p)
    if spec.fill:
        out.append(fill_check(spec, t))
    return out
