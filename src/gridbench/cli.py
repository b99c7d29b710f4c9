"""The ``gridbench`` command line: a thin front end over spec, run, analysis and reports.

Exit codes: 0 success; 1 a threshold failed; 2 bad input (spec, results, usage);
3 the backend failed or could not be reached; 4 the measurement is invalid (with
``--fail-invalid``); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from gridbench import __version__
from gridbench.errors import BackendError, GridbenchError, SpecError

EXIT_OK, EXIT_THRESHOLD, EXIT_INPUT, EXIT_BACKEND, EXIT_INVALID, EXIT_INTERRUPTED = (
    0,
    1,
    2,
    3,
    4,
    130,
)

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


# -- helpers -------------------------------------------------------------------------------
def _results_root(args: argparse.Namespace) -> Path:
    from gridbench.store.layout import results_root

    return results_root(getattr(args, "results", None))


def _load(args: argparse.Namespace, *, host: bool = True) -> tuple[Any, dict[str, Any], Any]:
    from gridbench.run.check import check_config
    from gridbench.spec import load_spec, make_plan

    spec, data = load_spec(args.spec, args.set)
    plan = make_plan(spec, data, str(args.spec))
    try:
        check_config([p.spec for p in plan.points], host=host)
    except SpecError as exc:
        raise SpecError(exc.message, where=f"{args.spec}: {exc.where}", fix=exc.fix) from None
    return spec, data, plan


def _print_plan(plan: Any) -> None:
    from gridbench.spec.units import format_rate

    spec = plan.spec
    t = Table(title=f"plan: {spec.name} ({spec.load.model} load on {spec.backend.type})")
    t.add_column("point")
    t.add_column("values")
    t.add_column("peak rate", justify="right")
    t.add_column("jobs/trial", justify="right")
    t.add_column("s/trial", justify="right")
    for p in plan.points:
        t.add_row(
            str(p.index),
            ", ".join(f"{k}={v}" for k, v in p.values.items()) or "-",
            format_rate(p.peak_rate_per_s) if p.peak_rate_per_s is not None else "-",
            str(p.jobs_per_trial) if p.jobs_per_trial is not None else "closed loop",
            f"{p.seconds_per_trial:.0f}",
        )
    console.print(t)
    total = plan.total_jobs
    console.print(
        f"{len(plan.points)} points × {spec.trials} trials = {len(plan.trials)} trials; "
        f"total jobs: {total if total is not None else 'open-ended (closed loop)'}; "
        f"estimated duration: {plan.estimated_seconds / 60:.1f} min"
    )


# -- commands ------------------------------------------------------------------------------
def cmd_validate(args: argparse.Namespace) -> int:
    spec, _, plan = _load(args, host=False)
    console.print(
        f"[green]ok[/]: {args.spec} is a valid spec ({spec.load.model} load, "
        f"{len(plan.points)} points × {spec.trials} trials)"
    )
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    _, _, plan = _load(args, host=False)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=1))
    else:
        _print_plan(plan)
        console.print("[dim]dry run: nothing was submitted[/]")
    return EXIT_OK


def _confirm(plan: Any, yes: bool) -> None:
    from gridbench.spec.plan import needs_confirmation

    if not needs_confirmation(plan) or yes:
        return
    n, cap = plan.total_jobs, plan.spec.safety.confirm_above
    if not sys.stdin.isatty():
        raise GridbenchError(
            f"the plan submits {n} jobs, above safety.confirm_above ({cap})",
            where="safety.confirm_above",
            fix="pass --yes to confirm, or reduce the plan",
        )
    answer = console.input(f"The plan submits {n} jobs (above {cap}). Continue? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise GridbenchError("not confirmed; nothing was submitted")


def _execute(plan: Any, data: dict[str, Any], root: Path) -> Any:
    from gridbench.console import RichObserver
    from gridbench.run.experiment import ExperimentRunner

    async def main() -> Any:
        with RichObserver(console) as obs:
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


def _analyze_and_report(run_path: Path, *, quiet: bool = False, as_json: bool = False) -> int:
    from gridbench.pipeline import analyze_and_report, exit_code_for

    metrics, paths = analyze_and_report(run_path)
    if as_json:
        print(json.dumps(metrics, indent=1, default=str))
    elif not quiet:
        from gridbench.report.terminal import render_summary

        render_summary(metrics, console)
        if "html" in paths:
            console.print(f"HTML report: [cyan]{paths['html']}[/]")
        csvs = [p for k, p in paths.items() if str(p).endswith(".csv")]
        if csvs:
            console.print(
                f"tables (CSV): [cyan]{csvs[0].parent}[/]; JSON: "
                f"[cyan]{paths.get('report_json', '')}[/]"
            )
    return exit_code_for(metrics)


def cmd_run(args: argparse.Namespace) -> int:
    _, data, plan = _load(args)
    _print_plan(plan)
    _confirm(plan, args.yes)
    outcome = _execute(plan, data, _results_root(args))
    code = _finish(outcome, args)
    return code


def _finish(outcome: Any, args: argparse.Namespace) -> int:
    status = outcome.status
    if status == "failed":
        err_console.print(f"[red]experiment failed[/]: {outcome.error}")
    if not outcome.trials:
        return EXIT_BACKEND if status == "failed" else EXIT_INTERRUPTED
    code = _analyze_and_report(outcome.run.path)
    if getattr(args, "fail_invalid", False) and code == EXIT_OK:
        from gridbench.store.layout import read_json

        if not read_json(outcome.run.metrics_file).get("validity", {}).get("valid", True):
            code = EXIT_INVALID
    if status == "aborted":
        return EXIT_INTERRUPTED
    if status == "failed":
        return EXIT_BACKEND
    return code


def cmd_demo(args: argparse.Namespace) -> int:
    from gridbench.examples import demo_spec_path

    args.spec = demo_spec_path()
    sets = list(args.set or [])
    sets.append(f"backend.options.preset={args.policy}")
    if args.quick:
        sets += ["trials=1", "trial.duration=6s"]
    args.set = sets
    console.print(
        f"[bold]gridbench demo[/]: a compressed EDGI rate ramp against the embedded reference "
        f"grid ({args.policy} status polling)"
    )
    return cmd_run(args)


def cmd_analyze(args: argparse.Namespace) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    return _analyze_and_report(run.path, as_json=args.json)


def cmd_report(args: argparse.Namespace) -> int:
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    return _analyze_and_report(run.path)


def cmd_list(args: argparse.Namespace) -> int:
    from gridbench.store.catalogue import list_runs

    runs = list_runs(_results_root(args))
    if args.json:
        print(json.dumps(runs, indent=1, default=str))
        return EXIT_OK
    t = Table(title=f"experiments in {_results_root(args)}")
    for col in ("id", "name", "backend", "model", "status", "trials", "verdict", "created"):
        t.add_column(col)
    for r in runs:
        t.add_row(
            str(r.get("id")),
            str(r.get("name")),
            str(r.get("backend", "")),
            str(r.get("load_model", "")),
            str(r.get("status", "")),
            f"{r.get('trials_done', '?')}/{r.get('trials_planned', '?')}",
            str(r.get("verdict", "")),
            str(r.get("created", "")),
        )
    console.print(t)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from gridbench.store.catalogue import resolve_run
    from gridbench.store.layout import read_json

    run = resolve_run(args.run, _results_root(args))
    exp = run.read_experiment()
    console.print_json(data=exp)
    if run.metrics_file.exists():
        from gridbench.report.terminal import render_summary

        render_summary(read_json(run.metrics_file), console)
    else:
        console.print("[dim]not analysed yet: run 'gridbench analyze' on it[/]")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from gridbench.run.check import check
    from gridbench.spec import load_spec

    spec, _ = load_spec(args.spec, args.set)
    steps = asyncio.run(check(spec, job_timeout_s=args.timeout))
    t = Table(title=f"connectivity check: {spec.backend.type}")
    for col in ("step", "result", "detail", "fix"):
        t.add_column(col)
    for s in steps:
        t.add_row(
            s.name, "[green]ok[/]" if s.ok else "[red]FAILED[/]", _escape(s.detail), _escape(s.fix)
        )
    console.print(t)
    return EXIT_OK if all(s.ok for s in steps) else EXIT_BACKEND


def cmd_cleanup(args: argparse.Namespace) -> int:
    from gridbench.run.cleanup import cleanup_run, find_outstanding
    from gridbench.store.catalogue import resolve_run

    run = resolve_run(args.run, _results_root(args))
    todo = find_outstanding(run)
    n = sum(df.height for df in todo.values())
    console.print(f"{run.path}: {n} outstanding jobs in {len(todo)} trials")
    report = asyncio.run(cleanup_run(run, dry_run=args.dry_run, force=args.force))
    if args.dry_run:
        console.print("[dim]dry run: nothing was cancelled[/]")
        return EXIT_OK
    console.print(
        f"cancelled {report.cancelled} jobs"
        + (
            f"; stopped leftover processes {report.stopped_processes}"
            if report.stopped_processes
            else ""
        )
    )
    for e in report.errors:
        err_console.print(f"[red]{e}[/]")
    return EXIT_BACKEND if report.errors else EXIT_OK


def cmd_ingest_edgi(args: argparse.Namespace) -> int:
    from gridbench.events.ingest_run import ingest_edgi_run

    out = ingest_edgi_run(args.client, args.reports, Path(args.out), overwrite=args.force)
    for w in out.warnings[:50]:
        err_console.print(f"[yellow]warning[/]: {w}")
    console.print(
        f"ingested {out.events} events of {out.jobs} jobs into [cyan]{args.out}[/]; "
        f"analyse with: gridbench analyze {args.out}"
    )
    return EXIT_OK


def cmd_ingest_jsonl(args: argparse.Namespace) -> int:
    from gridbench.events.ingest_run import ingest_jsonl_run

    out = ingest_jsonl_run(args.file, Path(args.out), overwrite=args.force)
    for w in out.warnings[:50]:
        err_console.print(f"[yellow]warning[/]: {w}")
    console.print(
        f"ingested {out.events} events of {out.jobs} jobs into [cyan]{args.out}[/]; "
        f"analyse with: gridbench analyze {args.out}"
    )
    return EXIT_OK


def cmd_reference_serve(args: argparse.Namespace) -> int:
    from gridbench.reference.server import run

    return int(run(args))


def cmd_backends(args: argparse.Namespace) -> int:
    from gridbench.backends.registry import available

    for name, target in sorted(available().items()):
        console.print(f"{name:12s} {target}")
    from gridbench.backends.command_presets import listing

    t = Table(title="command backend presets (backend: {type: command, options: {preset: NAME}})")
    for col in ("preset", "tested here", "written for"):
        t.add_column(col)
    for p in listing():
        t.add_row(p.name, "yes" if p.tested else "no", _escape(p.written_for))
    console.print(t)
    return EXIT_OK


# -- parser --------------------------------------------------------------------------------
def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", help="experiment spec (YAML)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a spec field, e.g. --set trials=5 --set load.rate=2/s",
    )


def _results_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--results", metavar="DIR", help="results root (default: $GRIDBENCH_RESULTS or ./results)"
    )


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="gridbench",
        description="Benchmark job flow through distributed computing infrastructure: per-"
        "component latency and throughput, the bottleneck, the knee, and whether the "
        "measurement can be trusted.",
        epilog="Exit codes: 0 ok, 1 threshold failed, 2 bad input, 3 backend failed, "
        "4 invalid measurement (--fail-invalid), 130 interrupted. Docs: docs/.",
    )
    ap.add_argument("--version", action="version", version=f"gridbench {__version__}")
    ap.add_argument("-v", "--verbose", action="store_true", help="log warnings and details")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check a spec and report every problem with its line")
    _spec_args(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "plan", help="dry run: points × trials, job count, duration; submits nothing"
    )
    _spec_args(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)

    for name, helptext in (("run", "run an experiment, analyse it and write its reports"),):
        p = sub.add_parser(name, help=helptext)
        _spec_args(p)
        _results_arg(p)
        p.add_argument(
            "-y",
            "--yes",
            action="store_true",
            help="confirm plans above safety.confirm_above without asking",
        )
        p.add_argument(
            "--fail-invalid",
            action="store_true",
            help="exit 4 when the validity verdict says the measurement is invalid",
        )
        p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "demo", help="run the compressed EDGI rate ramp on the embedded reference grid"
    )
    _results_arg(p)
    p.add_argument(
        "--policy",
        choices=["sequential", "batched"],
        default="sequential",
        help="the CE's status-update policy (default: sequential, CREAM-like)",
    )
    p.add_argument("--quick", action="store_true", help="one short trial per rate")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a field of the demo spec",
    )
    p.add_argument("-y", "--yes", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--fail-invalid", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("analyze", help="(re-)analyse a results directory and rewrite its reports")
    p.add_argument("run", help="results directory, run id, or 'latest'")
    _results_arg(p)
    p.add_argument("--json", action="store_true", help="print metrics JSON (docs/metrics.md)")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("report", help="regenerate the HTML/CSV/JSON reports of a run")
    p.add_argument("run", help="results directory, run id, or 'latest'")
    _results_arg(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("list", help="list experiments in the results store")
    _results_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="show one experiment's record and summary")
    p.add_argument("run", help="results directory, run id, or 'latest'")
    _results_arg(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="check the backend answers and one tiny job runs end to end")
    _spec_args(p)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the job")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("cleanup", help="cancel jobs a crashed or killed run left behind")
    p.add_argument("run", help="results directory, run id, or 'latest'")
    _results_arg(p)
    p.add_argument("--dry-run", action="store_true", help="only count outstanding jobs")
    p.add_argument(
        "--force",
        action="store_true",
        help="clean up even though the run's process still seems alive",
    )
    p.set_defaults(func=cmd_cleanup)

    p = sub.add_parser("ingest", help="import foreign events into a results directory")
    isub = p.add_subparsers(dest="format", required=True, metavar="FORMAT")
    q = isub.add_parser("edgi", help="EDGI monitoring reports joined to client events")
    q.add_argument(
        "--client",
        required=True,
        metavar="CLIENT_EVENTS",
        help="client events: an events.csv or a .jsonl file",
    )
    q.add_argument(
        "--reports",
        required=True,
        action="append",
        metavar="DIR_OR_URL",
        help="report directory or listing URL, nearest component first "
        "(repeatable; TIER=DIR_OR_URL names the tier)",
    )
    q.add_argument("--out", required=True, metavar="RUN_DIR")
    q.add_argument("--force", action="store_true", help="replace an existing RUN_DIR")
    q.set_defaults(func=cmd_ingest_edgi)
    q = isub.add_parser("jsonl", help="events in the documented JSON-lines format")
    q.add_argument("file")
    q.add_argument("--out", required=True, metavar="RUN_DIR")
    q.add_argument("--force", action="store_true", help="replace an existing RUN_DIR")
    q.set_defaults(func=cmd_ingest_jsonl)

    p = sub.add_parser(
        "reference", help="the reference grid (a real HTTP CE -> bridge -> DG chain)"
    )
    rsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = rsub.add_parser("serve", help="serve the reference grid until interrupted")
    from gridbench.reference.server import add_arguments

    add_arguments(q)
    q.set_defaults(func=cmd_reference_serve)

    p = sub.add_parser("backends", help="list available backends (built-in and plugins)")
    p.set_defaults(func=cmd_backends)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return ap


# Subcommands that live in their own package: each module has ``register(subparsers)``,
# which adds its parser(s) and sets ``func`` returning an exit code.
COMMAND_MODULES: tuple[str, ...] = (
    "gridbench.io.command",
    "gridbench.compare.command",
    "gridbench.web.command",
)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while the parser's imports load
        return EXIT_INTERRUPTED
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args))
    except BackendError as exc:
        err_console.print(f"[red]error[/]: {_escape(str(exc))}")
        return EXIT_BACKEND
    except GridbenchError as exc:
        err_console.print(f"[red]error[/]: {_escape(str(exc))}")
        return EXIT_INPUT
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into head: not an error of ours
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (keeps the exit flush quiet)
        return EXIT_OK
    except Exception as exc:  # a bug of ours: one line, the trace only on request
        if args.verbose:
            raise
        err_console.print(
            f"[red]internal error[/]: {_escape(f'{type(exc).__name__}: {exc}')}\n"
            "  fix: re-run with -v for the traceback and report it; recorded results are kept "
            "and can be re-analysed with 'gridbench analyze'"
        )
        return EXIT_INPUT


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


if __name__ == "__main__":
    sys.exit(main())
