"""``gridbench model fit|predict|check``: the what-if model's command line (calm: a short
summary; the model file, the predicted run and its report hold the details)."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.table import Table

from gridbench.errors import EXIT_OK, EXIT_THRESHOLD, SpecError
from gridbench.family import Ui
from gridbench.fmt import safe_markup
from gridbench.jobflow.api import parse_rate
from gridbench.model import check as chk

# what an install whose gridbench.commands entry point is older still names
from gridbench.model.cli import COMMANDS as COMMANDS
from gridbench.model.fit import fit_model, read_measured
from gridbench.model.fitchain import fit_chain
from gridbench.model.fitstaging import add_staging
from gridbench.model.predict import Marking, Repeat, check_size, predict
from gridbench.model.spec import ChainModel, durations, load_model, model_text
from gridbench.model.steps.base import step_kind
from gridbench.model.sweep import Window, parse_sweeps, points, with_value
from gridbench.store.catalogue import resolve_run
from gridbench.store.layout import RunDir, write_text_atomic
from gridbench.units import parse_duration


def _fit_rates(run: Path, given: str | None) -> list[float] | None:
    """The rates to fit on: the given ones, else those the run sustained (its metrics'
    knee), else every rate."""
    if given:
        return [parse_rate(r.strip()) for r in given.split(",") if r.strip()]
    from gridbench.jobflow.api import analyze_run

    metrics = analyze_run(run)
    knee = (metrics.get("knee") or {}).get("highest_sustained_rate_per_s")
    if knee is None:
        return None
    return [
        float(p["offered_rate_per_s"]) for p in metrics["points"] if p["offered_rate_per_s"] <= knee
    ]


def cmd_fit(args: argparse.Namespace, ui: Ui) -> int:
    run = resolve_run(args.run, ui.results_root(args))
    out = Path(args.out or f"{run.id}.model.yaml")
    if out.exists() and not args.force:
        raise SpecError("the model file exists", where=str(out), fix="give --out NEW or --force")
    measured = read_measured(run.path, _fit_rates(run.path, args.rates))
    name = args.name or f"model of {run.id}"
    every = read_measured(run.path)  # the limits show at the high rates
    if measured.edgi:
        model = add_staging(fit_model(measured, run.id, name, every), measured, every)
    else:  # the run's own chain
        _, _, runtime = chk.measured_window(run.path)
        model = fit_chain(measured, every, run.id, name, runtime)
    for item in args.set or []:  # declared values win over what the data showed
        key, _, value = item.partition("=")
        model = with_value(model, key.strip(), value, "--set")
    write_text_atomic(out, model_text(model))
    c = ui.console
    rates = ", ".join(f"{r:g}/s" for r in sorted(set(measured.rates)))
    c.print(f"fitted on {len(measured.trial_ids)} trial(s) at {rates} ({len(measured.trial)} jobs)")
    _show_model(ui, model)
    c.print(f"model: [cyan]{safe_markup(out)}[/] (edit it; then `gridbench model check` it)")
    return EXIT_OK


def _show_model(ui: Ui, model: ChainModel) -> None:
    t = Table(box=None, show_header=True, header_style="bold")
    for col in ("duration", "dist", "mean", "cv", "KS D", "n"):
        t.add_column(col)
    for where, d in durations(model):
        fit = d.fit
        t.add_row(
            where, d.dist, f"{d.mean:.4g} s", f"{d.cv:.2f}",
            f"{fit.ks_d:.3f}" if fit and fit.ks_d is not None else "-", str(fit.n if fit else "-"),
        )  # fmt: skip
    ui.console.print(t)
    tiers, su = model.tiers, model.status_update
    if tiers is None or su is None:
        for st in model.chain or []:
            line = step_kind(st.kind).describe(st)
            if line is not None:
                ui.console.print(line)
        return
    ui.console.print(
        f"ce concurrency {_limit(tiers.ce.concurrency)} · bridge concurrency "
        f"{_limit(tiers.bridge.concurrency)} · worker slots {_limit(tiers.workers.slots)} · status "
        f"updates {su.policy} (cost {su.per_job_cost_s:g} s, interval {su.interval_s:g} s)"
    )
    for where, link in (("stage-in", tiers.stage_in), ("stage-out", tiers.stage_out)):
        if link is not None:
            ui.console.print(
                f"{where}: {link.bandwidth_bps / 1024:.0f} KiB/s, {link.per_file_s:g} s per "
                f"file, streams {_limit(link.streams)}"
            )


def _limit(v: int | None) -> str:
    return "no limit seen" if v is None else str(v)


def _show(v: float | str | None) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _window(args: argparse.Namespace) -> Window:
    return Window(
        duration_s=parse_duration(args.duration),
        drain_s=parse_duration(args.drain),
        arrival=args.arrival,
        rate_per_s=parse_rate(args.rate),
    )


def _progress(ui: Ui) -> Any:
    """Trials simulated so far: in place in a terminal, a line every 5 s in a log."""
    term = ui.err_console.is_terminal
    last = [time.monotonic()]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if term:
            ui.err_console.print(f"simulated {done}/{total} trials", end="\r")
        elif now - last[0] >= 5.0 and done < total:
            last[0] = now
            ui.err_console.print(f"simulated {done}/{total} trials")

    return show


def cmd_predict(args: argparse.Namespace, ui: Ui) -> int:
    model = load_model(args.model)
    for item in args.set or []:
        key, _, value = item.partition("=")
        model = with_value(model, key.strip(), value, "--set")
    pts = points(model, parse_sweeps(args.sweep or []), _window(args))
    rep = Repeat(reps=args.reps, seed=args.seed, fit_uncertainty=not args.no_fit_uncertainty)
    spec = {
        "name": args.name or f"prediction of {model.name}",
        "description": f"predicted by the model {args.model}; not measured",
        "sweep": {k: v for k, v in parse_sweeps(args.sweep or [])},
        "trial": {"duration": args.duration},
        "warmup": {"method": "fraction", "fraction": 0.15},
    }
    est = check_size(pts, rep.reps, args.max_jobs)
    ui.err_console.print(f"simulating {len(pts)} point(s) × {rep.reps}: {est.said()}")
    run, info = predict(
        pts,
        ui.results_root(args),
        spec,
        Marking(str(args.model), model),
        rep,
        _progress(ui),
        max_simulated=args.max_jobs,
    )
    ui.console.print(
        f"predicted {len(pts)} point(s) × {rep.reps}: {info['events']:,} simulated events in "
        f"{info['wall_s']:.1f} s; {_checked(model)}"
    )
    return ui.analyze_and_show(run)


def _checked(model: ChainModel) -> str:
    if not model.checks:
        return "the model was never checked against a measured run (gridbench model check)"
    parts = [f"{c.run} ({'within' if c.within else 'NOT within'} bounds)" for c in model.checks]
    return "checked on " + ", ".join(parts)


def cmd_check(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.jobflow.api import analyze_run

    model = load_model(args.model)
    run = resolve_run(args.run, ui.results_root(args))
    fitted = model.fitted_from.run if model.fitted_from else None
    window, rates, runtime = chk.measured_window(run.path)
    sweeps = [("rate", [f"{r}/s" for r in rates])]
    if runtime is not None:
        sweeps.append(("job.runtime", [f"{runtime}s"]))
    pts = chk.as_measured(points(model, sweeps, window), chk.measured_points(run.path))
    spec = {
        "name": f"check of {model.name} on {run.id}",
        "warmup": {"method": "fraction", "fraction": 0.15},
    }
    _, measured_spec = run.read_spec()
    if isinstance(measured_spec, dict) and "warmup" in measured_spec:
        spec["warmup"] = measured_spec["warmup"]
    rep = Repeat(reps=args.reps, seed=args.seed)
    pred, _ = predict(
        pts,
        ui.results_root(args),
        spec,
        Marking(str(args.model), model, run.id),
        rep,
        max_simulated=args.max_jobs,
    )
    verdict = chk.compare(analyze_run(run.path), analyze_run(pred, write=True))
    model = chk.record(model, run.id, verdict)
    write_text_atomic(Path(args.model), model_text(model))
    pred_run = RunDir(pred)
    marked = dict(pred_run.read_experiment().get("predicted") or {})
    pred_run.update_experiment(
        predicted=marked | {"checks": [c.model_dump() for c in model.checks]}
    )
    _show_check(ui, verdict, run.id, fitted)
    ui.console.print(
        f"predicted run: [cyan]{safe_markup(pred)}[/]; the check is recorded in "
        f"{safe_markup(args.model)}"
    )
    if args.json:
        print(json.dumps([asdict(r) for r in verdict.rows], default=str))
    return EXIT_OK if verdict.within else EXIT_THRESHOLD


def _show_check(ui: Ui, verdict: chk.Verdict, run_id: str, fitted: str | None) -> None:
    note = (
        " (the run it was fitted on: only its other rates are independent)"
        if fitted == run_id
        else ""
    )
    ui.console.print(f"model check against {safe_markup(run_id)}{note}")
    t = Table(box=None, header_style="bold")
    for col in ("figure", "point", "measured", "predicted", "error", "limit"):
        t.add_column(col)
    for r in verdict.rows:
        bad = (
            r.limit is not None
            and not (r.error is None and r.limit == 0.0)
            and (r.error is None or r.error > r.limit)
        )
        err = "-" if r.error is None else f"{r.error:.1%}"
        t.add_row(r.figure, r.point, _show(r.measured), _show(r.predicted),
                  f"[red]{err}[/]" if bad else err,
                  "-" if r.limit is None else f"{r.limit:.0%}")  # fmt: skip
    ui.console.print(t)
    for r in verdict.rows:  # the prediction's interval: covered, or why not
        if r.ci95 is not None or r.why:
            said = "covers the measurement" if r.covered else (r.why or "no measurement")
            hw = "no interval" if r.ci95 is None else f"±{r.ci95:.3g} s"
            ui.console.print(f"  {r.point}: predicted {hw}: {safe_markup(said)}")
    ui.console.print("[green]within bounds[/]" if verdict.within else "[red]not within bounds[/]")
