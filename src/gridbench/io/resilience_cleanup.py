"""``gridbench cleanup`` for an io run killed during its resilience phase: a brick it
paused (SIGSTOP) would stay paused forever. The run's ``resilience.jsonl`` names every
pause with the brick's pid and start time; a pause not followed by a resume, restart or
restore is continued (SIGCONT) if that pid still is the process that was paused. A brick
killed and not brought back is only reported, with the command that brings it back:
gridbench never started it. A run killed outside that phase is recorded ``crashed``
(its fio died with it) and the work folders it left are named. Nothing in the run folder
is trusted (pids are checked
against their recorded start time; SIGCONT is all that is ever sent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil

from gridbench.errors import GridbenchError
from gridbench.family import CleanupOutcome
from gridbench.io.resilience import RECORDS
from gridbench.io.resilience_model import BRINGS_BACK, TAKES_DOWN
from gridbench.states import CRASHED, CREATED, PREPARING, RUNNING
from gridbench.store.layout import RunDir, now_iso
from gridbench.store.records import read_records
from gridbench.store.spawned import live_runner, recorded_process


def left_down(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per server, the last fault that took it away and was never undone."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        ev, server = r.get("event"), r.get("server")
        if ev == "fault" and isinstance(server, str) and r.get("ok") is True:
            if r.get("action") in TAKES_DOWN:
                out[server] = r
            elif r.get("action") in BRINGS_BACK:
                out.pop(server, None)
        elif ev == "restore" and isinstance(r.get("servers"), list):
            for s in r["servers"]:
                out.pop(str(s), None)
    return out


def _runner_alive(run: RunDir) -> int | None:
    try:
        exp = run.read_experiment()
    except (GridbenchError, OSError, ValueError):
        return None
    if exp.get("status") not in ("running", "preparing"):
        return None
    made = run.experiment_file.stat().st_ctime if run.experiment_file.exists() else None
    return live_runner(exp.get("pid"), exp.get("create_time"), made)


def cleanup_run(run: RunDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
    """Continue the bricks the run left paused; report those it left down."""
    live = _runner_alive(run)
    if live is not None and not force and not dry_run:
        raise GridbenchError(
            f"the run is still in progress (gridbench pid {live})",
            where=str(run.path),
            fix="stop it with Ctrl-C (it brings the volume back itself), or pass --force",
        )
    lines: list[str] = []
    errors: list[str] = []
    records = read_records(run.path / RECORDS) if (run.path / RECORDS).exists() else []
    for server, f in sorted(left_down(records).items()):
        t = f.get("t")
        at = f"{t:.1f} s" if isinstance(t, int | float) else "an unrecorded time"
        label = f"{server} ({f.get('address')}), {f.get('action')} at {at}"
        if f.get("action") != "pause":
            lines.append(
                f"{label}: left down; bring it back with 'gluster volume start VOLUME force'"
            )
            continue
        proc, why = recorded_process(f.get("pid"), f.get("created"))
        if proc is None:
            lines.append(f"{label}: nothing to do ({why})")
        elif dry_run:
            lines.append(f"{label}: would continue pid {proc.pid} (SIGCONT)")
        else:
            try:
                proc.resume()
                lines.append(f"{label}: continued pid {proc.pid}")
            except psutil.Error as exc:
                errors.append(f"{label}: could not continue pid {proc.pid}: {exc}")
    if killed(run):
        lines += _killed_run(run, dry_run=dry_run)
    elif not lines and not errors:
        lines.append(f"{run.path}: the run left no brick paused or down")
    if dry_run:
        lines.append("dry run: nothing was signalled")
    return CleanupOutcome(tuple(lines), tuple(errors))


def killed(run: RunDir) -> bool:
    """Whether the run is recorded as under way while its runner is gone (kill -9)."""
    try:
        status = run.read_experiment().get("status")
    except (GridbenchError, OSError, ValueError):
        return False
    return status in (CREATED, PREPARING, RUNNING) and _runner_alive(run) is None


def _killed_run(run: RunDir, *, dry_run: bool) -> list[str]:
    """Record a killed run as crashed (its fio died with it: PR_SET_PDEATHSIG) and name
    the work folders it left on its targets. They are named, not removed: a path read
    from the run folder is never acted on."""
    lines = []
    targets = run.read_experiment().get("targets")
    for t in targets if isinstance(targets, list) else []:
        work = t.get("workdir") if isinstance(t, dict) else None
        if isinstance(work, str) and Path(work).is_dir():
            lines.append(f"its test files remain in {work[:300]}: remove them by hand")
    if not dry_run:
        run.update_experiment(status=CRASHED, cleaned=now_iso())
        lines.append(f"the run was killed: now recorded as {CRASHED}")
    return lines
