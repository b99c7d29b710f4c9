"""The resilience run: ``writers`` threads write checksummed files into the target for
``duration`` seconds while the faults of the schedule hit the file system's servers; then
every server is brought back, the time until the volume is healed is measured, and every
file written is read back and verified (:mod:`gridbench.io.integrity`).

Every event reaches ``RUN/resilience.jsonl`` as it happens (one line each, fsynced):
``start``, ``write`` (per file: times, bytes, sha256, ok/error), ``fault``, ``restore``,
``recovered``, ``cap`` (the writers reached ``max_bytes``) and ``integrity``. Times are
seconds since the load started (monotonic clock)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError
from gridbench.io import cache
from gridbench.io.faults import Injector, check_servers
from gridbench.io.gluster import Brick, Gluster
from gridbench.io.integrity import Written, verify
from gridbench.io.resilience_hosts import HostWriters
from gridbench.io.resilience_model import BRINGS_BACK, ResilienceSpec
from gridbench.io.safety import PreparedTarget, inside
from gridbench.store.layout import now_iso
from gridbench.store.records import append_record

RECORDS = "resilience.jsonl"
#: A volume's command line and its bricks as checked before the run.
Servers = tuple[Gluster, list[Brick]]
#: A writer whose write failed waits this long before the next (no busy loop on EIO).
ERROR_PAUSE_S = 0.05


def prepare_servers(spec: ResilienceSpec) -> Servers | None:
    """Check the servers the faults name, before anything is written (None: no system)."""
    if spec.system is None:
        return None
    gluster = Gluster(spec.system)
    return gluster, check_servers(spec, gluster)


class _Log:
    """Appends records from several threads to one file, each as it happens."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()

    def __call__(self, rec: dict[str, Any]) -> None:
        with self.lock:
            append_record(self.path, rec)


def _write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)  # the bytes are on the servers before the write counts as done
    finally:
        os.close(fd)


class Writers:
    """The write load: each writer writes new files of random bytes until stopped."""

    def __init__(
        self,
        spec: ResilienceSpec,
        workdir: Path,
        log: Callable[[dict[str, Any]], None],
        now: Callable[[], float],
        *,
        prefix: str = "",
        max_bytes: int | None = None,
    ) -> None:
        self.spec = spec
        self.workdir = workdir
        self.prefix = prefix  # a host's writers name their files HOST-wNN-...
        self.max_bytes = spec.max_bytes if max_bytes is None else max_bytes
        self.log = log
        self.now = now
        self.stop = threading.Event()
        self.written: list[Written] = []
        self.lock = threading.Lock()
        self.claimed = 0
        self.capped = False
        self.threads = [
            threading.Thread(target=self._run, args=(w,), daemon=True, name=f"gridbench-w{w}")
            for w in range(spec.writers)
        ]

    def _claim(self) -> bool:
        """Room for one more file under ``max_bytes``; the first writer refused records
        when the cap stopped the load."""
        with self.lock:
            if self.claimed + self.spec.file_size > self.max_bytes:
                if not self.capped:
                    self.capped = True
                    self.log({"event": "cap", "t": self.now(), "bytes": self.claimed})
                return False
            self.claimed += self.spec.file_size
            return True

    def _run(self, w: int) -> None:
        seq = 0
        while not self.stop.is_set() and self._claim():
            name = f"{self.prefix}w{w:02d}-{seq:06d}.dat"
            path = inside(self.workdir / name, self.workdir)
            data = os.urandom(self.spec.file_size)
            digest = hashlib.sha256(data).hexdigest()
            t0 = self.now()
            try:
                _write_file(path, data)
                ok, error = True, ""
            except OSError as exc:
                ok, error = False, exc.strerror or str(exc)
            t1 = self.now()
            if ok:
                with self.lock:
                    self.written.append(Written(path, len(data), digest))
            self.log(
                {
                    "event": "write",
                    "writer": w,
                    "file": name,
                    "t0": t0,
                    "t1": t1,
                    "bytes": len(data),
                    "sha256": digest,
                    "ok": ok,
                    "error": error,
                }
            )
            seq += 1
            if not ok:
                time.sleep(ERROR_PAUSE_S)

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self, timeout: float) -> list[int | str]:
        """Stop and wait; the writers still blocked in a write after ``timeout``."""
        self.stop.set()
        end = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, end - time.monotonic()))
        return [i for i, t in enumerate(self.threads) if t.is_alive()]

    def close(self) -> None:
        self.stop.set()

    def files(self) -> list[Written]:
        with self.lock:
            return list(self.written)


def _schedule(
    spec: ResilienceSpec, injector: Injector | None, now: Callable[[], float]
) -> list[threading.Thread]:
    """Apply the faults at their times. After each action that brings a server back, a
    watcher measures the time until the volume is whole and healed again."""
    watchers = []
    for f in sorted(spec.faults, key=lambda f: f.at):
        time.sleep(max(0.0, f.at - now()))
        assert injector is not None  # the spec model requires a system with faults
        t = now()
        injector.apply(f.action, f.server, t, f.at)
        if f.action in BRINGS_BACK:
            w = threading.Thread(
                target=injector.wait_recovered,
                args=(t, now, spec.recovery_timeout, f"{f.action} {f.server}"),
                daemon=True,
            )
            w.start()
            watchers.append(w)
    time.sleep(max(0.0, spec.duration - now()))
    return watchers


def run_resilience(
    spec: ResilienceSpec,
    target: PreparedTarget,
    run_path: Path,
    servers: Servers | None,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """The whole phase; returns the integrity result (also recorded)."""
    log = _Log(run_path / RECORDS)
    workdir = target.workdir / "resilience"
    workdir.mkdir(exist_ok=True)
    injector = Injector(servers[0], servers[1], log) if servers else None
    t_start = time.monotonic()

    def now() -> float:
        return time.monotonic() - t_start

    log(
        {
            "event": "start",
            "wall": now_iso(),
            "target": target.name,
            "duration": spec.duration,
            "writers": spec.writers,
            "file_size": spec.file_size,
            "interval": spec.interval,
            "bricks": [b.address for b in servers[1]] if servers else [],
            "hosts": list(spec.hosts or []),
        }
    )
    writers: Writers | HostWriters
    if spec.hosts:  # the writers run on client hosts, each reporting every file it wrote
        writers = HostWriters(spec, workdir, log, now, run_path)
        where = f" from {', '.join(spec.hosts)}"
    else:
        writers = Writers(spec, workdir, log, now)
        where = ""
    progress(f"{target.name}: resilience load{where}, {len(spec.faults)} fault(s)")
    writers.start()
    try:
        watchers = _schedule(spec, injector, now)
        if injector is not None:
            injector.restore(now())  # a writer blocked on a paused server gets going again
        stuck = writers.join(spec.recovery_timeout)
        if stuck:
            log({"event": "stuck", "t": now(), "writers": stuck})
        if injector is not None:
            progress(f"{target.name}: waiting for the volume to heal")
            for w in watchers:
                w.join(spec.recovery_timeout)
            # the integrity check reads a whole, healed volume
            injector.wait_recovered(now(), now, spec.recovery_timeout, "end of load")
    except BaseException:
        if injector is not None:  # failed or interrupted: leave the volume whole again
            with contextlib.suppress(GridbenchError, OSError):
                injector.restore(now())
        raise
    finally:
        writers.close()
        if injector is not None:
            injector.release()
    files = writers.files()
    progress(f"{target.name}: integrity check of {len(files)} file(s)")
    way = "caches dropped" if cache.can_drop_caches() and cache.drop_caches() else "page cache"
    result = verify(files, spec.verify_threads)
    log({"event": "integrity", "t": now(), "read_after": way, **result})
    return result
