"""The resilience load written from client hosts (``resilience.hosts``; docs/io.md): on each
inventory host :mod:`gridbench.io.host_writers` runs ``writers`` writers into the target's
work folder (the same storage at the same path there), started as the fio servers of the
``clients:`` phase are (in the host's namespace, or over SSH:
:func:`gridbench.io.fio_servers.module_argv`).

Every file a host's writer reports (name, times, bytes, sha256, ok) becomes a ``write`` line
of ``RUN/resilience.jsonl`` with its ``host``, its times moved onto the controller's clock
(the moment ``go`` was sent to that host is its zero), and, when acknowledged, a file the
integrity check reads back here. So a fault hits the volume while other machines write,
and every byte they were told was written is still checked.

A host whose writers end before their ``done`` line (the host or its link lost) is named in
a ``host_lost`` line; the files it reported before are checked like the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gridbench.hosts.inventory import Host, load_inventory
from gridbench.io.fio_servers import how_to_start, module_argv, require_ready, tail
from gridbench.io.integrity import Written
from gridbench.io.resilience_model import ResilienceSpec
from gridbench.store.spawned import RUN_ENV

#: in each host writer's environment: the inventory host it writes from
ROLE_ENV = "GRIDBENCH_IO_HOST_WRITER"
Log = Callable[[dict[str, Any]], None]


class _Host:
    """One host's writers: the local child that runs them, and what it reported."""

    def __init__(self, host: Host, argv: list[str], log_path: Path, env: dict[str, str]) -> None:
        self.name = host.name
        self.log_path = log_path
        with log_path.open("ab") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
            )
        self.zero = 0.0  # the controller's time when "go" was sent
        self.done = False
        self.stuck: list[str] = []
        self.reader: threading.Thread | None = None

    def say(self, line: bytes, *, close: bool = False) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
            if close:
                self.proc.stdin.close()
        except (OSError, ValueError):
            pass  # it has gone: its reader names it lost


class HostWriters:
    """The write load from ``spec.hosts``: the same face as
    :class:`gridbench.io.resilience.Writers` (start, join, close, files)."""

    def __init__(
        self,
        spec: ResilienceSpec,
        workdir: Path,
        log: Log,
        now: Callable[[], float],
        run_path: Path,
    ) -> None:
        assert spec.hosts is not None and spec.inventory is not None
        inventory = Path(spec.inventory)
        inv = load_inventory(inventory)
        self.workdir = workdir
        self.log = log
        self.now = now
        self.lock = threading.Lock()
        self.written: list[Written] = []
        self.hosts: list[_Host] = []
        share = max(spec.file_size, spec.max_bytes // len(spec.hosts))
        try:
            for i, name in enumerate(spec.hosts):
                host = inv.host(name, f"resilience.hosts[{i}]")
                how = how_to_start(host, spec.start, "resilience.start")
                args = ["--dir", str(workdir), "--writers", str(spec.writers)]
                args += ["--file-size", str(spec.file_size), "--max-bytes", str(share)]
                args += ["--prefix", f"{name}-", "--join-timeout", str(spec.recovery_timeout)]
                argv = module_argv(host, how, inventory, "gridbench.io.host_writers", args)
                env = {**os.environ, RUN_ENV: str(run_path.resolve()), ROLE_ENV: name}
                log_path = run_path / "raw" / f"writers-{name}.log"
                log({"event": "host_writers", "host": name, "how": how, "argv": argv})
                self.hosts.append(_Host(host, argv, log_path, env))
            for h in self.hosts:
                require_ready(
                    h.proc,
                    h.log_path,
                    f"the resilience writers did not start on {h.name}",
                    f"resilience.hosts ({h.name}, log {h.log_path})",
                    "mount the target at the same path on every host, check the host's "
                    "python imports gridbench and the host answers ('gridbench hosts check')",
                )
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        for h in self.hosts:
            h.zero = self.now()
            h.say(b"go\n")
            h.reader = threading.Thread(
                target=self._read, args=(h,), daemon=True, name=f"gridbench-hw-{h.name}"
            )
            h.reader.start()

    def _read(self, h: _Host) -> None:
        """Every line the host's writers print, onto the controller's records."""
        assert h.proc.stdout is not None
        for raw in h.proc.stdout:
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            rec["host"] = h.name
            for k in ("t", "t0", "t1"):
                if isinstance(rec.get(k), int | float):
                    rec[k] = float(rec[k]) + h.zero
            if rec.get("event") == "done":
                h.done = True
                h.stuck = [f"{h.name}:w{w}" for w in rec.get("stuck") or []]
                continue
            if rec.get("event") == "write" and rec.get("ok") is True:
                written = Written(
                    self.workdir / str(rec.get("file")), int(rec["bytes"]), str(rec["sha256"])
                )
                with self.lock:
                    self.written.append(written)
            self.log(rec)
        h.proc.wait()
        if not h.done:
            self.log(
                {
                    "event": "host_lost",
                    "host": h.name,
                    "t": self.now(),
                    "exit": h.proc.returncode,
                    "detail": tail(h.log_path, 3) or f"its writers ended ({h.proc.returncode})",
                }
            )

    def join(self, timeout: float) -> list[int | str]:
        """Tell every host to stop and wait for its last line; the writers still blocked
        in a write after ``timeout`` (``HOST:wN``), a host that never answered as ``HOST``."""
        for h in self.hosts:
            h.say(b"stop\n", close=True)
        stuck: list[int | str] = []
        for h in self.hosts:
            if h.reader is not None:
                h.reader.join(timeout + 5.0)
            if h.reader is not None and h.reader.is_alive():
                stuck.append(h.name)
            stuck.extend(h.stuck)
        return stuck

    def close(self) -> None:
        """Every host's writers stopped (their stdin closed, then SIGTERM, then SIGKILL)."""
        for h in self.hosts:
            h.say(b"", close=True)
        for h in self.hosts:
            try:
                h.proc.wait(5.0)
            except subprocess.TimeoutExpired:
                h.proc.terminate()
                try:
                    h.proc.wait(5.0)
                except subprocess.TimeoutExpired:
                    h.proc.kill()
                    h.proc.wait()
            if h.proc.stdout is not None and (h.reader is None or not h.reader.is_alive()):
                h.proc.stdout.close()

    def files(self) -> list[Written]:
        with self.lock:
            return list(self.written)
