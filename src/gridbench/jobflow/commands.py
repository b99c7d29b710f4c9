"""The job-flow family's own commands: validate, plan, run, demo, check, ingest,
reference and backends (the generic ones live in gridbench.cli's package). Their names, help and
arguments are declared in :mod:`gridbench.jobflow.cli`; each function here takes the
parsed arguments and the command line's :class:`~gridbench.family.Ui`."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from rich.table import Table

from gridbench.errors import (
    EXIT_BACKEND,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    GridbenchError,
    SpecError,
)
from gridbench.family import Ui
from gridbench.fmt import safe_markup
from gridbench.store.layout import RunDir
from gridbench.units import format_duration


def _load(args: argparse.Namespace, *, host: bool = True) -> tuple[Any, dict[str, Any], Any]:
    from gridbench.jobflow.experiment.check import check_config
    from gridbench.jobflow.spec import load_spec, make_plan

    spec, data = load_spec(args.spec, args.set)
    plan = make_plan(spec, data, str(args.spec))
    try:
        check_config([p.spec for p in plan.points], host=host)
    except SpecError as exc:
        raise SpecError(exc.message, where=f"{args.spec}: {exc.where}", fix=exc.fix) from None
    return spec, data, plan


def _print_plan(plan: Any, ui: Ui) -> None:
    from gridbench.jobflow.specbase.units import format_rate

    spec = plan.spec
    t = Table(
        title=f"plan: {safe_markup(spec.name)} ({spec.load.model} load on "
        f"{safe_markup(spec.backend.type)})"
    )
    t.add_column("point")
    t.add_column("values")
    t.add_column("peak rate", justify="right")
    t.add_column("jobs/trial", justify="right")
    t.add_column("s/trial", justify="right")
    for p in plan.points:
        t.add_row(
            str(p.index),
            safe_markup(", ".join(f"{k}={v}" for k, v in p.values.items()) or "-"),
            format_rate(p.peak_rate_per_s) if p.peak_rate_per_s is not None else "-",
            str(p.jobs_per_trial) if p.jobs_per_trial is not None else "closed loop",
            f"{p.seconds_per_trial:.0f}",
        )
    ui.console.print(t)
    total = plan.total_jobs
    ui.console.print(
        f"{len(plan.points)} points × {spec.trials} trials = {len(plan.trials)} trials; "
        f"total jobs: {total if total is not None else 'open-ended (closed loop)'}; "
        f"estimated duration: {plan.estimated_seconds / 60:.1f} min"
    )
    sched = plan.schedule_dict()
    if sched is not None:
        _print_schedule(sched, plan.estimated_seconds, ui)


def _print_schedule(sched: dict[str, Any], seconds: float, ui: Ui) -> None:
    """The trial order under ``schedule`` with each estimated start, and the end (UTC)."""
    import datetime as dt

    now = dt.datetime.now(dt.UTC)
    t = Table(title="schedule: trial order (estimated starts if run now)")
    t.add_column("#", justify="right")
    t.add_column("trial")
    t.add_column("not before", justify="right")
    t.add_column("estimated start (UTC)")
    for k, row in enumerate(sched["order"]):
        at = now + dt.timedelta(seconds=row["estimated_start_s"])
        t.add_row(
            str(k),
            row["trial"],
            format_duration(row["not_before_s"]),
            at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    ui.console.print(t)
    end = now + dt.timedelta(seconds=seconds)
    mode = "interleaved" if sched["interleave"] else "point by point"
    ui.console.print(
        f"order: {mode}; pause {format_duration(sched['pause_s'])}"
        + (f"; window {format_duration(sched['window_s'])}" if sched["window_s"] else "")
        + f"; estimated end: {end.strftime('%Y-%m-%d %H:%M:%S')} UTC"
    )


# -- commands ------------------------------------------------------------------------------
def _warn(args: argparse.Namespace, plan: Any, ui: Ui) -> None:
    """What the plan's configuration would silently ignore, one warning line each."""
    from gridbench.jobflow.experiment.check import config_warnings

    for w in config_warnings([p.spec for p in plan.points]):
        ui.err_console.print(f"[yellow]warning[/]: {safe_markup(args.spec)}: {safe_markup(w)}")


def cmd_validate(args: argparse.Namespace, ui: Ui) -> int:
    spec, _, plan = _load(args, host=False)
    _warn(args, plan, ui)
    ui.console.print(
        f"[green]ok[/]: {safe_markup(args.spec)} is a valid spec ({spec.load.model} load, "
        f"{len(plan.points)} points × {spec.trials} trials)"
    )
    return EXIT_OK


def cmd_plan(args: argparse.Namespace, ui: Ui) -> int:
    _, _, plan = _load(args, host=False)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=1))
    else:
        _print_plan(plan, ui)
        ui.console.print("[dim]dry run: nothing was submitted[/]")
    return EXIT_OK


def _confirm(plan: Any, yes: bool, ui: Ui) -> None:
    from gridbench.jobflow.spec.plan import needs_confirmation

    if not needs_confirmation(plan) or yes:
        return
    n, cap = plan.total_jobs, plan.spec.safety.confirm_above
    if not sys.stdin.isatty():
        raise GridbenchError(
            f"the plan submits {n} jobs, above safety.confirm_above ({cap})",
            where="safety.confirm_above",
            fix="pass --yes to confirm, or reduce the plan",
        )
    # escaped: Rich would read "[y/N]" as markup and swallow it
    answer = ui.console.input(
        safe_markup(f"The plan submits {n} jobs (above {cap}). Continue? [y/N] ")
    )
    if answer.strip().lower() not in ("y", "yes"):
        raise GridbenchError("not confirmed; nothing was submitted")


def _execute(plan: Any, data: dict[str, Any], root: Path, ui: Ui) -> Any:
    from gridbench.jobflow.experiment.runner import ExperimentRunner
    from gridbench.jobflow.progress import observer_for

    async def main() -> Any:
        with observer_for(ui.console) as obs:
            runner = ExperimentRunner(plan, data, root, observer=obs)
            loop = asyncio.get_running_loop()
            hits = 0

            def on_signal() -> None:
                nonlocal hits
                hits += 1
                if hits == 1:
                    obs.message(
                        "[yellow]stopping: no new submissions; cancelling outstanding "
                        "jobs and saving what was recorded (Ctrl-C again to force)[/]"
                    )
                    runner.abort()
                else:
                    raise KeyboardInterrupt

            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, on_signal)
            try:
                return await runner.execute()
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)

    return asyncio.run(main())


def cmd_run(args: argparse.Namespace, ui: Ui) -> int:
    _, data, plan = _load(args)
    _print_plan(plan, ui)
    _warn(args, plan, ui)
    _confirm(plan, args.yes, ui)
    outcome = _execute(plan, data, ui.results_root(args), ui)
    code = _finish(outcome, args, ui)
    return code


def _finish(outcome: Any, args: argparse.Namespace, ui: Ui) -> int:
    status = outcome.status
    if status == "failed":
        ui.err_console.print(f"[red]experiment failed[/]: {safe_markup(outcome.error)}")
    if not outcome.trials:
        return EXIT_BACKEND if status == "failed" else EXIT_INTERRUPTED
    code = ui.analyze_and_show(outcome.run.path)
    if getattr(args, "fail_invalid", False) and code == EXIT_OK:
        from gridbench.store.layout import read_json

        if not read_json(outcome.run.metrics_file).get("validity", {}).get("valid", True):
            code = EXIT_INVALID
    if status == "aborted":
        return EXIT_INTERRUPTED
    if status == "failed":
        return EXIT_BACKEND
    return code


def cmd_demo(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.jobflow.examples import demo_spec_path

    args.spec = demo_spec_path()
    sets = list(args.set or [])
    from gridbench.jobflow.reference.presets import DEMO_OUTPUT_SIZE, PRESET_NOTES

    sets.append(f"backend.options.preset={args.policy}")
    if args.policy == "staging":  # the jobs need output for the slow link to move
        sets.append(f"job.output_size={DEMO_OUTPUT_SIZE}")
    if args.quick:
        sets += ["trials=1", "trial.duration=6s"]
    where = "the embedded reference grid"
    if getattr(args, "lab", None):  # the grid's tiers on the lab's hosts
        from gridbench.jobflow.backends.reference_hosts import lab_demo_sets

        lab_sets, placed = lab_demo_sets(args.lab)
        sets = lab_sets + sets  # the user's own --set still wins
        where = f"the reference grid on lab {args.lab} ({placed})"
    args.set = sets
    ui.console.print(
        f"[bold]gridbench demo[/]: a compressed EDGI rate ramp against {safe_markup(where)} "
        f"({PRESET_NOTES[args.policy]})"
    )
    return cmd_run(args, ui)


def cmd_check(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.jobflow.experiment.check import check
    from gridbench.jobflow.spec import load_spec

    spec, _ = load_spec(args.spec, args.set)
    steps = asyncio.run(check(spec, job_timeout_s=args.timeout))
    t = Table(title=f"connectivity check: {safe_markup(spec.backend.type)}")
    for col in ("step", "result", "detail", "fix"):
        t.add_column(col)
    for s in steps:
        t.add_row(
            safe_markup(s.name),
            "[green]ok[/]" if s.ok else "[red]FAILED[/]",
            safe_markup(s.detail),
            safe_markup(s.fix),
        )
    ui.console.print(t)
    ok = all(s.ok for s in steps)
    if spec.load.remote_agents is not None:
        ok = _check_agents(spec, args.timeout, ui) and ok
    return EXIT_OK if ok else EXIT_BACKEND


def _check_agents(spec: Any, timeout_s: float, ui: Ui) -> bool:
    """Print the agents' table (one row per agent, a column per step); all passed?"""
    from gridbench.jobflow.experiment.agent_check import STEP_NAMES, check_agents

    block = spec.load.remote_agents
    rows = asyncio.run(check_agents(spec, job_timeout_s=timeout_s))
    t = Table(title=f"agents: {safe_markup(block.kind)}", show_lines=True)
    names = [n for n in STEP_NAMES if n != "ssh" or block.hosts]  # ssh: hosts only
    for col in ("agent", "host", *names):
        t.add_column("offset ± bound" if col == "clock offset" else col)
    for r in rows:
        cells = []
        for name in names:
            s = r.step(name)
            if s is None:
                cells.append("–")
            elif s.ok:
                cells.append(f"[green]ok[/] {safe_markup(s.detail)}")
            else:
                fix = f"\n[dim]fix: {safe_markup(s.fix)}[/]" if s.fix else ""
                cells.append(f"[red]FAILED[/] {safe_markup(s.detail)}{fix}")
        t.add_row(safe_markup(r.agent), safe_markup(r.host), *cells)
    ui.console.print(t)
    return bool(rows) and all(r.ok for r in rows)


def _ingested(out: Any, dest: str, ui: Ui) -> int:
    from gridbench.jobflow.events.edgi.join import joined_by_lines

    for w in out.warnings[:50]:
        ui.err_console.print(f"[yellow]warning[/]: {safe_markup(w)}")
    for line in joined_by_lines(out.stats.get("joined_by") or {}):  # which id each tier used
        ui.console.print(safe_markup(line))
    ui.console.print(
        f"ingested {out.events} events of {out.jobs} jobs into [cyan]{safe_markup(dest)}[/]; "
        f"analyse with: gridbench analyze {safe_markup(dest)}"
    )
    return EXIT_OK


def cmd_ingest_edgi(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.jobflow.events.ingest_run import ingest_edgi_run

    out = ingest_edgi_run(args.client, args.reports, Path(args.out), overwrite=args.force)
    return _ingested(out, args.out, ui)


def cmd_ingest_jsonl(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.jobflow.events.ingest_run import ingest_jsonl_run

    out = ingest_jsonl_run(args.file, Path(args.out), overwrite=args.force)
    return _ingested(out, args.out, ui)


def cmd_reference_serve(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.jobflow.reference.server import run

    return int(run(args))


def cmd_backends(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.jobflow.backends.registry import available

    for name, target in sorted(available().items()):
        ui.console.print(f"{name:12s} {target}")
    from gridbench.jobflow.backends.command.presets import listing

    t = Table(title="command backend presets (backend: {type: command, options: {preset: NAME}})")
    for col in ("preset", "tested here", "written for"):
        t.add_column(col)
    for p in listing():
        t.add_row(p.name, "yes" if p.tested else "no", safe_markup(p.written_for))
    ui.console.print(t)
    return EXIT_OK


def _jobflow_run(args: argparse.Namespace, ui: Ui, command: str, why: str) -> RunDir:
    """The run ``args.run`` names, or the one error saying ``command`` (a job-flow
    command) does not apply to another family's run, with that family's commands."""
    from gridbench.family import DEFAULT_KIND, family, kind_of, not_applicable
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, ui.results_root(args))
    kind = kind_of(run.read_experiment())
    if kind != DEFAULT_KIND:
        raise not_applicable(family(kind), command, why)
    return run


def cmd_collect(args: argparse.Namespace, ui: Ui) -> int:
    """Fetch the agents' own logs of a run and merge the events the controller lacks."""
    from gridbench.jobflow.run.agent_collect import collect_run

    run = _jobflow_run(args, ui, "collect", "only job-flow runs have agents' event logs")
    report = collect_run(run)
    for src in report.fetched:
        ui.console.print(f"fetched {safe_markup(src)}")
    for tid, n in report.added.items():
        ui.console.print(f"{safe_markup(tid)}: {n} events merged")
    for e in report.errors:
        ui.err_console.print(f"[red]{safe_markup(e)}[/]")
    ui.console.print(f"now: gridbench analyze {safe_markup(run.path)}")
    return EXIT_BACKEND if report.errors else EXIT_OK


def cmd_export(args: argparse.Namespace, ui: Ui) -> int:
    """Write each trial's events of a run as CSV or Parquet."""
    from gridbench.jobflow.events.export import export_events

    run = _jobflow_run(args, ui, "export", "only job-flow runs have event logs")
    done = export_events(run.path, args.format, Path(args.out) if args.out else None)
    for e in done:
        if e.path is None:
            ui.err_console.print(f"[yellow]{safe_markup(e.trial)}: no event log, skipped[/]")
        else:
            shown = f"{e.events:,} events -> {safe_markup(e.path)}"
            ui.console.print(f"{safe_markup(e.trial)}: {shown}")
    return EXIT_OK
