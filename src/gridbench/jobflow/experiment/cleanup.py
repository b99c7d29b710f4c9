"""Cancelling jobs a crashed or killed run left behind, by job id (never by pattern).

Every file of the run is untrusted input (someone may have planted or edited it), so:

- a process is signalled only when its pid exists *and* its start time equals the one
  gridbench recorded when it spawned it (``local_start`` attrs ``create_time``; the
  grid's ``backend_runtime.create_time``); any other pid is reported "not ours, left alone";
- the backend is never asked to run its ``init`` template, and the command backend's
  ``cancel`` template runs only when it is the one gridbench recorded in experiment.json
  at run time (``backend_runtime.command.templates.cancel``): a spec.yaml edited or planted
  afterwards is "planted", and its commands are not run;
- an embedded grid that is provably gone took its jobs with it: they are recorded
  cancelled and nothing is sent to its recorded URL (that port may be anybody's now);
- local agents' Dask workers still running for the run (their environment names it) are
  stopped, each by its own pid (:func:`gridbench.jobflow.run.agent_processes.stop_stray_agents`);
- the temporary folders of a controller that is gone (agents' TLS key and Dask scratch,
  the embedded grid's configuration and reports) are removed;
- ``gridbench cleanup`` shows this plan (``dry_run=True``) and asks before acting.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import psutil

from gridbench.errors import GridbenchError
from gridbench.jobflow.backends.base import Backend, CancelClient, OrphanStopper
from gridbench.jobflow.backends.command.backend import CommandBackend
from gridbench.jobflow.backends.reference import GRID_TMP_PREFIX
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.model import (
    STAGE_CANCELLED,
)
from gridbench.jobflow.events.run_folder import JobFlowRun
from gridbench.jobflow.events.trial_log import open_trial_log, read_trial_log
from gridbench.jobflow.run.agent_processes import stop_stray_agents, sweep_stale_tls
from gridbench.jobflow.run.cleanup_reservations import (
    find_reservations,
    outstanding_per_trial,
    release_all,
)
from gridbench.jobflow.run.outstanding import outstanding_jobs
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.states import COMPLETE, NEEDS_CLEANUP
from gridbench.store.layout import RunDir, now_iso, read_json, write_json
from gridbench.store.spawned import NOT_THIS_RUN, live_runner, run_process, sweep_orphaned


@dataclass
class CleanupReport:
    per_trial: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    stopped_processes: list[int] = field(default_factory=list)
    released_reservations: int = 0  # a probe's advance reservations deleted
    #: what was (or, in a dry run, would be) run and signalled, and what was left alone
    plan: list[str] = field(default_factory=list)

    @property
    def cancelled(self) -> int:
        return sum(self.per_trial.values())


def find_outstanding(run: RunDir) -> dict[str, pl.DataFrame]:
    """Each trial's acknowledged jobs never seen to end (trials without any left out)."""
    return outstanding_per_trial(run, outstanding_jobs)


def runner_alive(exp: dict[str, Any], files_made: float | None = None) -> int | None:
    """The pid of the process still running this experiment, if any (pid reuse checked)."""
    runner = exp.get("runner")
    runner = runner if isinstance(runner, dict) else {}
    return live_runner(runner.get("pid"), runner.get("create_time"), files_made)


async def cleanup_run(run: RunDir, *, dry_run: bool = False, force: bool = False) -> CleanupReport:
    """Cancel every outstanding job of ``run`` through its backend and record it; in a dry
    run only say, in ``plan``, what would be run and signalled."""
    report = CleanupReport()
    exp = run.read_experiment()
    made = run.experiment_file.stat().st_ctime if run.experiment_file.exists() else None
    live = runner_alive(exp, made)
    if live is not None and not force and not dry_run:
        raise GridbenchError(
            f"the run is still in progress (gridbench pid {live})",
            where=str(run.path),
            fix="stop it with Ctrl-C or 'kill -TERM' (it cancels its own jobs), "
            "or pass --force if that process is stuck",
        )
    # first: a stopped agent cancels what it submitted and logs it, before cleanup reads
    report.stopped_processes += stop_stray_agents(run.path, report.plan, dry_run=dry_run)
    todo = find_outstanding(run)
    runtime = exp.get("backend_runtime")
    runtime = runtime if isinstance(runtime, dict) else {}
    holder = _helper_gone(run, runtime)
    if todo and holder:
        _went_with_helper(run, todo, holder, report, dry_run=dry_run)
    elif todo:
        backend = _cleanup_backend(run, runtime, report)
        if backend is not None:
            await _cancel_all(run, backend, todo, report, dry_run=dry_run)
    reservations = find_reservations(run)
    if reservations:
        spec, _ = load_spec_text(run.spec_text(), str(run.spec_file))
        backend = create_backend(spec.backend.type, spec.backend.options)
        report.released_reservations = await release_all(
            run, backend, reservations, report.plan, report.errors, dry_run=dry_run
        )
    report.stopped_processes += _stop_orphans(run, runtime, report.plan, dry_run=dry_run)
    if not dry_run:  # what a killed controller left in the temporary folder (TLS keys, grid)
        for d in sweep_stale_tls() + sweep_orphaned(GRID_TMP_PREFIX):
            report.plan.append(f"removed {d}: its process is gone")
    if not dry_run and exp.get("status") in ("running", "created"):
        run.update_experiment(status="crashed", cleaned=now_iso())
    elif not dry_run and exp.get("status") == NEEDS_CLEANUP and not report.errors:
        run.update_experiment(status=COMPLETE, cleaned=now_iso())  # nothing is left now
    return report


def final_state(run: RunDir, status: str) -> str:
    """The state a finished run records: ``complete`` becomes ``needs cleanup`` when a
    trial lost an agent (trial.json ``agents.<name>.lost``) or could not cancel the jobs it
    gave up on (``cancel_error``: they are recorded lost, for :func:`cleanup_run`), so its
    status says so (issue 22.7). trial.json alone tells: no event log is read again."""
    if status != COMPLETE:
        return status
    for tid in JobFlowRun.of(run).trial_ids():
        path = JobFlowRun.of(run).trial_dir(tid) / "trial.json"
        info = read_json(path) if path.is_file() else None
        if not isinstance(info, dict):
            continue
        agents = info.get("agents")
        lost = isinstance(agents, dict) and any(
            isinstance(a, dict) and a.get("lost") for a in agents.values()
        )
        if lost or info.get("cancel_error"):
            return NEEDS_CLEANUP
    return status


def _cleanup_backend(run: RunDir, runtime: dict[str, Any], report: CleanupReport) -> Backend | None:
    """The run's backend, made to cancel only: never its ``init``; a command backend's
    cancel template only when it is the one recorded at run time."""
    spec, _ = load_spec_text(run.spec_text(), str(run.spec_file))
    extra = runtime.get("options")
    options = {**spec.backend.options, **(extra if isinstance(extra, dict) else {})}
    backend = create_backend(spec.backend.type, options)
    if not isinstance(backend, CommandBackend):
        return backend if _trusted_client(backend, options, report) else None
    backend = backend.without_init()
    cancel = backend.cancel_template()
    command = runtime.get("command")
    templates = command.get("templates") if isinstance(command, dict) else None
    recorded = templates.get("cancel") if isinstance(templates, dict) else None
    if cancel is None or cancel != recorded:
        report.errors.append(
            "the cancel template of spec.yaml is not the one gridbench recorded in "
            "experiment.json when the run started: it may be planted, and is not run; "
            "cancel the jobs by hand"
        )
        return None
    report.plan.append(f"cancel template (recorded at run time): {shlex.join(cancel)}")
    return backend


async def _cancel_all(
    run: RunDir,
    backend: Backend,
    todo: dict[str, pl.DataFrame],
    report: CleanupReport,
    *,
    dry_run: bool,
) -> None:
    """Cancel (or plan to cancel) each trial's outstanding jobs; log them as cancelled."""
    if not dry_run:
        await backend.open()
    clock = AnchoredClock()
    try:
        for tid, left in todo.items():
            ids = left["backend_id"].to_list()
            try:
                if isinstance(backend, OrphanStopper):
                    # jobs of a dead client process (local backend): by their verified pids
                    pids = _verified_pids(run, tid, left, report.plan, dry_run=dry_run)
                    if not dry_run:
                        report.stopped_processes += backend.stop_orphans(pids)
                else:
                    report.plan.append(f"{tid}: cancel {len(ids)} jobs by id: {_few(ids)}")
                    if not dry_run:
                        await backend.cancel(ids)
            except Exception as exc:
                report.errors.append(f"{tid}: cancel of {len(ids)} jobs failed: {exc}")
                continue
            report.per_trial[tid] = len(ids)
            if not dry_run:
                _record_cancelled(run, tid, left, clock, {"by": "cleanup"})
    finally:
        if not dry_run:
            await backend.close()


def _record_cancelled(
    run: RunDir, tid: str, left: pl.DataFrame, clock: AnchoredClock, attrs: dict[str, Any]
) -> None:
    """Log ``left``'s jobs cancelled now, and the trial aborted if it was left running."""
    log = open_trial_log(JobFlowRun.of(run).trial_dir(tid))
    try:
        now = clock.now_ns()
        for job in left["job"].to_list():
            log.append(job, STAGE_CANCELLED, now, attrs=attrs)
    finally:
        log.close()
    _mark_trial(run, tid)


def _helper_gone(run: RunDir, runtime: dict[str, Any]) -> str:
    """The recorded helper that held the run's jobs (an embedded grid), if it provably no
    longer runs: its pid is gone or another process's. Its jobs went with it, and its
    recorded URL may now be anybody's port, so nothing is sent there. Else ""."""
    pid = runtime.get("pid")
    if pid is None or runtime.get("create_time") is None:
        return ""
    proc, why = run_process(pid, runtime.get("create_time"), run.path)
    if proc is not None or why == NOT_THIS_RUN or why.startswith(("no ", "cannot ")):
        return ""
    marker = str(runtime.get("cmdline_marker") or "helper")[:60]
    return f"helper pid {str(pid)[:20]} ({marker})"


def _went_with_helper(
    run: RunDir, todo: dict[str, pl.DataFrame], holder: str, report: CleanupReport, *, dry_run: bool
) -> None:
    """Record the jobs of a helper that is gone as ended with it: nothing to cancel."""
    clock = AnchoredClock()
    for tid, left in todo.items():
        report.plan.append(
            f"{tid}: {left.height} jobs went with {holder}, which is gone: "
            + ("would record" if dry_run else "recorded") + " them cancelled, nothing sent"
        )  # fmt: skip
        report.per_trial[tid] = left.height
        if not dry_run:
            _record_cancelled(run, tid, left, clock, {"by": "cleanup", "reason": "helper gone"})


def _few(ids: list[Any], n: int = 5) -> str:
    shown = ", ".join(str(i)[:80] for i in ids[:n])
    return shown + (f" and {len(ids) - n} more" if len(ids) > n else "")


def _verified_pids(
    run: RunDir, tid: str, left: pl.DataFrame, plan: list[str], *, dry_run: bool
) -> list[int]:
    """The pids of ``left``'s jobs whose start time matches the recorded one; the others
    are named in ``plan`` and left alone."""
    ev = read_trial_log(JobFlowRun.of(run).trial_dir(tid))
    attrs = ev.filter((pl.col("stage") == "local_start") & pl.col("job").is_in(left["job"]))[
        "attrs"
    ].to_list()
    ours = []
    for text in attrs:
        try:
            rec = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            rec = None
        rec = rec if isinstance(rec, dict) else {}
        pid, created = rec.get("pid"), rec.get("create_time")
        proc, why = run_process(pid, created, run.path)
        if proc is None:
            plan.append(f"{tid}: pid {str(pid)[:20]}: {_not_ours(why)}, left alone")
            continue
        assert isinstance(pid, int)
        ours.append(pid)
        plan.append(
            f"{tid}: pid {pid}: "
            + ("would stop" if dry_run else "stopping")
            + " (SIGTERM to its process group)"
        )
    return ours


def _mark_trial(run: RunDir, tid: str) -> None:
    path = JobFlowRun.of(run).trial_dir(tid) / "trial.json"
    if path.exists():
        info = read_json(path)
        if info.get("status") == "running":
            info["status"] = "aborted"
            write_json(path, info)


def _stop_orphans(
    run: RunDir, runtime: dict[str, Any], plan: list[str], *, dry_run: bool
) -> list[int]:
    """Stop a helper process (an embedded grid) the crashed run started, if still alive,
    its start time is the one recorded when it was spawned, and its environment names this
    run (:func:`gridbench.store.spawned.run_process`)."""
    pid, created = runtime.get("pid"), runtime.get("create_time")
    marker = str(runtime.get("cmdline_marker") or "helper")[:60]
    if pid is None:
        return []
    proc, why = run_process(pid, created, run.path)
    try:
        if proc is None:
            gone = why == "already gone"
            plan.append(
                f"helper pid {str(pid)[:20]}: {_not_ours(why)}" + ("" if gone else ", left alone")
            )
            return []
        plan.append(
            f"helper pid {proc.pid} ({marker}): " + ("would stop" if dry_run else "stopping")
        )
        if dry_run:
            return []
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (psutil.Error, ProcessLookupError):
        return []
    return [proc.pid]


#: Environment variables a run's options may not hand to the programs cleanup runs.
_LOADER_VARS = ("LD_", "PYTHON", "PERL5", "RUBY")


def _trusted_client(backend: Backend, options: dict[str, Any], report: CleanupReport) -> bool:
    """Whether cleanup may run the backend's cancel program: the one on the user's own
    PATH, shown with its full path in the plan, and no loader variables from the run's
    options (a run folder is data: it must not choose what cleanup executes)."""
    env = options.get("env")
    env_keys = sorted(str(k) for k in env) if isinstance(env, dict) else []
    bad = [k for k in env_keys if k.startswith(_LOADER_VARS)]
    if bad:
        report.errors.append(
            f"the run's backend options set {', '.join(bad)} for the client programs: the "
            "run folder may be planted, and cleanup runs nothing under them; cancel by hand"
        )
        return False
    if not isinstance(backend, CancelClient):
        return True
    name, path = backend.cancel_client()
    mine = shutil.which(name)
    if path is None or path != mine:
        report.errors.append(
            f"the run's backend options make cleanup run {path or name}, not the {name} on "
            f"your PATH ({mine or 'none'}): the run folder may be planted, so it is not run; "
            "cancel the jobs by hand, or put that folder first on your PATH if you trust it"
        )
        return False
    report.plan.append(
        f"cancel program: {path}"
        + (f" (with the run's environment variables {', '.join(env_keys)})" if env_keys else "")
    )
    return True


def _not_ours(why: str) -> str:
    """Why a recorded pid is left alone, in the plan's words."""
    return why if why in (NOT_THIS_RUN, "already gone") else "not ours (no matching start time)"


def describe(report: CleanupReport) -> str:
    return json.dumps(
        {
            "cancelled": report.per_trial,
            "errors": report.errors,
            "stopped_processes": report.stopped_processes,
            "released_reservations": report.released_reservations,
        }
    )
