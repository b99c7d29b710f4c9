"""``gridbench cleanup RUN`` for a net run: stop what a killed run left running and remove
the namespaces and veth links it made.

Reads ``RUN/processes.jsonl`` and ``RUN/resources.jsonl`` (written by
:class:`~gridbench.messaging.processes.ProcessBook`) as untrusted input:

- a process is signalled only when its pid exists *and* its start time equals the
  recorded one (within 0.01 s); a recycled or planted pid is reported and left alone.
  SIGTERM first (to its process group when it leads one, as every child gridbench starts
  does), SIGKILL after a grace period;
- a namespace or link is removed only when its name is recorded *and* matches gridbench's
  naming pattern (``gbn-`` + 8 hex digits); nothing else named in the file is touched;
- no command line is ever taken from the files: the commands are ``ip netns delete NAME``
  and ``ip link delete NAME``, as argv lists.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from gridbench.errors import GridbenchError
from gridbench.family import CleanupOutcome
from gridbench.messaging.processes import (
    NAME_PATTERN,
    PROCESSES_FILE,
    PROXY_API_PATTERN,
    PROXY_PATTERN,
    RESOURCES_FILE,
)
from gridbench.states import CRASHED, CREATED, PREPARING, RUNNING
from gridbench.store.layout import RunDir, now_iso
from gridbench.store.spawned import live_runner, run_process

#: seconds between SIGTERM and SIGKILL
GRACE = 3.0


@dataclass(frozen=True, slots=True)
class _Proc:
    pid: int
    create_time: float | None
    role: str


def _lines(path: Path, errors: list[str]) -> list[dict[str, Any]]:
    """The JSON objects of a book file; a bad line is reported and skipped."""
    if not path.exists():
        return []
    out = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        errors.append(f"{path}: cannot read: {exc.strerror}")
        return []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            errors.append(f"{path}:{i}: not valid JSON (a crash may have cut it): skipped")
            continue
        if isinstance(obj, dict):
            out.append(obj)
        else:
            errors.append(f"{path}:{i}: not a JSON object: skipped")
    return out


def _procs(run: RunDir, errors: list[str]) -> list[_Proc]:
    out = []
    for i, obj in enumerate(_lines(run.path / PROCESSES_FILE, errors), 1):
        pid, ct, role = obj.get("pid"), obj.get("create_time"), obj.get("role")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
            errors.append(f"{PROCESSES_FILE} entry {i}: no valid pid ({pid!r}): skipped")
            continue
        started: float | None = None
        if isinstance(ct, int | float) and not isinstance(ct, bool) and math.isfinite(ct):
            started = float(ct)
        out.append(_Proc(pid, started, str(role)[:60]))
    return out


def _ours(p: _Proc, run_path: Path) -> tuple[psutil.Process | None, str]:
    """The live process if it is the one recorded and works for this run, else None and
    why not."""
    label = f"pid {p.pid} ({p.role})"
    proc, why = run_process(p.pid, p.create_time, run_path)
    if proc is None:
        return None, f"{label}: {why}" + ("" if why == "already gone" else ", left alone")
    return proc, label


def _signal(proc: psutil.Process, sig: signal.Signals) -> None:
    """Signal the process, and its group when it leads one (the children it forked; the
    process is proven this run's, so the group is one gridbench made)."""
    with contextlib.suppress(psutil.Error, OSError):
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)


def _stop(found: list[tuple[psutil.Process, str]], lines: list[str], errors: list[str]) -> None:
    for proc, _ in found:
        _signal(proc, signal.SIGTERM)
    _, alive = psutil.wait_procs([p for p, _ in found], timeout=GRACE)
    for proc in alive:
        _signal(proc, signal.SIGKILL)
    _, still = psutil.wait_procs(alive, timeout=GRACE)
    killed = {p.pid for p in alive}
    for proc, label in found:
        if proc in still:
            errors.append(f"{label}: still running after SIGKILL")
        else:
            lines.append(f"{label}: stopped" + (" (SIGKILL)" if proc.pid in killed else ""))


def _run_ip(argv: list[str]) -> tuple[bool, str]:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return r.returncode == 0, r.stderr.strip()


def _proxies(entries: list[dict[str, Any]], dry_run: bool, lines: list[str],
             errors: list[str]) -> None:  # fmt: skip
    """Close the proxies a remote environment opened on a host's latency path."""
    from gridbench.hosts.latency import close_proxy

    for obj in entries:
        if obj.get("kind") != "toxiproxy":
            continue
        name, api = obj.get("name"), obj.get("api")
        if not (isinstance(name, str) and PROXY_PATTERN.match(name)) or not (
            isinstance(api, str) and PROXY_API_PATTERN.match(api)
        ):
            errors.append(f"toxiproxy {str(name)[:40]!r}: not a gridbench proxy, left alone")
        elif dry_run:
            lines.append(f"toxiproxy {name}: would close it at {api}")
        else:
            try:
                close_proxy(api, name)
            except GridbenchError as exc:
                errors.append(f"toxiproxy {name}: {exc.message}")
            else:
                lines.append(f"toxiproxy {name}: closed")


def _resources(run: RunDir, dry_run: bool, lines: list[str], errors: list[str]) -> None:
    entries = _lines(run.path / RESOURCES_FILE, errors)
    if not entries:
        return
    _proxies(entries, dry_run, lines, errors)
    if not any(obj.get("kind") in ("netns", "link", "qdisc") for obj in entries):
        return
    ip = shutil.which("ip")
    if ip is None:
        errors.append("ip (Debian iproute2) is not installed: namespaces and links not checked")
        return
    seen: set[tuple[str, str]] = set()
    # namespaces first: deleting one removes the veth ends inside it, and so the pairs
    for kind in ("netns", "link", "qdisc"):
        for obj in entries:
            name = obj.get("name")
            if obj.get("kind") != kind or (kind, str(name)) in seen:
                continue
            seen.add((kind, str(name)))
            if not isinstance(name, str) or not NAME_PATTERN.match(name):
                errors.append(f"{kind} {str(name)[:40]!r}: not a gridbench name, left alone")
                continue
            if kind == "qdisc":
                continue  # a qdisc goes with its link
            if kind == "netns":
                exists = name in _netns_list(ip)
                cmd = [ip, "netns", "delete", name]
            else:
                exists = _run_ip([ip, "link", "show", "dev", name])[0]
                cmd = [ip, "link", "delete", name]
            if not exists:
                lines.append(f"{kind} {name}: already gone")
            elif dry_run:
                lines.append(f"{kind} {name}: would run {' '.join(cmd[1:])}")
            else:
                ok, err = _run_ip(cmd)
                if ok:
                    lines.append(f"{kind} {name}: removed")
                elif kind == "link" and not _run_ip([ip, "link", "show", "dev", name])[0]:
                    # the kernel frees a deleted namespace's veth pair a moment later
                    lines.append(f"{kind} {name}: gone with its namespace")
                else:
                    errors.append(f"{kind} {name}: {' '.join(cmd[1:])} failed: {err}")


def _netns_list(ip: str) -> set[str]:
    try:
        r = subprocess.run(
            [ip, "netns", "list"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()}


def _runner_alive(run: RunDir) -> int | None:
    """The pid of the gridbench process still running this run, if it seems to be."""
    try:
        exp = run.read_experiment()
    except (GridbenchError, OSError, ValueError):
        return None
    if exp.get("status") != "running":
        return None
    made = run.experiment_file.stat().st_ctime if run.experiment_file.exists() else None
    return live_runner(exp.get("pid"), exp.get("create_time"), made)


def cleanup_run(run: RunDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
    """Stop the processes and remove the namespaces and links a killed net run left."""
    lines: list[str] = []
    errors: list[str] = []
    live = _runner_alive(run)
    if live is not None and not force and not dry_run:
        raise GridbenchError(
            f"the run is still in progress (gridbench pid {live})",
            where=str(run.path),
            fix="stop it with Ctrl-C (it cleans up after itself), or pass --force if that "
            "process is stuck",
        )
    found: list[tuple[psutil.Process, str]] = []
    for p in _procs(run, errors):
        proc, label = _ours(p, run.path)
        if proc is None:
            lines.append(label)
        elif dry_run:
            lines.append(f"{label}: would stop (SIGTERM, then SIGKILL after {GRACE:g} s)")
        else:
            found.append((proc, label))
    if found:
        _stop(found, lines, errors)
    _resources(run, dry_run, lines, errors)
    if not lines and not errors:
        lines.append(f"{run.path}: the run recorded no processes or network resources")
    if dry_run:
        lines.append("dry run: nothing was stopped or removed")
    elif live is None:
        _mark_crashed(run, lines)
    return CleanupOutcome(tuple(lines), tuple(errors))


def _mark_crashed(run: RunDir, lines: list[str]) -> None:
    """A run still recorded as under way, whose runner is gone, was killed: say so (it
    would otherwise stay "running" for ever, as in the fault matrix's kill -9)."""
    with contextlib.suppress(GridbenchError, OSError, ValueError):
        if run.read_experiment().get("status") in (CREATED, PREPARING, RUNNING):
            run.update_experiment(status=CRASHED, cleaned=now_iso())
            lines.append(f"the run is now recorded as {CRASHED} (its runner is gone)")
