"""``gridbench compare`` and ``gridbench history``: the terminal (and JSON) front end."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from gridbench.compare.change import NEAR_ZERO_NOTE, metric_scale, relative_change
from gridbench.compare.model import (
    Comparison,
    Diff,
    ExperimentMetrics,
    History,
    MetricComparison,
    Settings,
    Value,
)
from gridbench.errors import GridbenchError
from gridbench.family import family, kind_of
from gridbench.fmt import fmt_pm, safe_markup

EXIT_OK, EXIT_REGRESSION = 0, 1

# ":fire:" in data stays text; a line outside a terminal is never wrapped (a path stays whole)
console = Console(highlight=False, emoji=False, soft_wrap=not sys.stdout.isatty())


def _root(args: argparse.Namespace) -> Path:
    from gridbench.store.layout import results_root

    return results_root(args.results)


def _settings(args: argparse.Namespace) -> Settings:
    if not 0.0 < args.alpha < 1.0:
        raise GridbenchError(
            f"--alpha must be between 0 and 1, got {args.alpha}", where="--alpha", fix="e.g. 0.05"
        )
    if args.min_effect < 0.0:
        raise GridbenchError(
            f"--min-effect must be >= 0, got {args.min_effect}",
            where="--min-effect",
            fix="e.g. 0.05 (5%), or 0 to flag any statistically significant change",
        )
    if args.max_samples is not None and args.max_samples < 2:
        raise GridbenchError(
            f"--max-samples must be at least 2, got {args.max_samples}",
            where="--max-samples",
            fix="e.g. 20000",
        )
    return Settings(alpha=args.alpha, min_effect=args.min_effect, max_samples=args.max_samples)


def _cell(v: Value | None, unit: str) -> str:
    if v is None or v.value is None:
        return "–"
    if unit == "ratio":
        text = f"{v.value * 100:.2f}%" + ("" if v.ci95 is None else f"±{v.ci95 * 100:.2f}")
    else:
        text = fmt_pm(v.value, v.ci95).replace(" ± ", "±")
    return text + ("*" if v.jobs is not None and v.jobs_total and v.jobs < v.jobs_total else "")


WORDS = {"improved": "better", "regressed": "worse"}
#: a significant change of a figure with no better direction is "changed" (yellow)
COLOURS = {"improved": "green", "regressed": "red"}


def _change(
    d: Diff | None, base: Value | None, test: Value | None, scale: float, alpha: float = 0.05
) -> str:
    if d is None:
        return "–"
    b, t = (None if v is None else v.value for v in (base, test))
    r = relative_change(b, t, scale)
    if r is not None:
        rel = f"{r * 100:+.1f}%"
    elif b is not None and t is not None:  # near-zero baseline: a percentage means nothing
        rel = f"{t - b:+.3g} (abs, {NEAR_ZERO_NOTE})"
    else:
        rel = "–"
    p = "untested" if d.p_adjusted is None else f"p={d.p_adjusted:.2g}"
    if not d.significant:  # a difference the test cannot tell from noise says so
        if d.p_adjusted is None:
            said = "noise unknown"
        else:
            said = "within noise" if d.p_adjusted >= alpha else "below the smallest effect"
        return f"[dim]{rel} {p} {said}[/]"
    colour = COLOURS.get(d.verdict, "yellow")
    return f"[bold {colour}]{rel} {p} {WORDS.get(d.verdict, d.verdict)}[/]"


def _scales(c: Comparison) -> dict[str, float]:
    """Each metric's largest magnitude over the comparison: what "near zero" is against."""
    out: dict[str, list[float | None]] = {m.metric: [] for m in c.metric_info}
    for p in c.points:
        for m in p.metrics:
            out.setdefault(m.metric, []).extend(v.value for v in m.values)
    return {k: metric_scale(vs) for k, vs in out.items()}


def _kind_target(e: ExperimentMetrics) -> tuple[str, str]:
    """The run's kind and what it measured, as its family's catalogue names it (the
    recorded backend when no installed family knows the kind)."""
    kind = kind_of(e.record)
    try:
        return kind, family(kind).catalogue(e.record).target
    except GridbenchError:
        return kind, e.backend or ""


def render_comparison(c: Comparison, out: Console, *, show_all: bool = False) -> None:
    """Print the experiments and one table per point; significant changes highlighted."""
    from gridbench.report.records_table import Column, print_records  # (the CLI starts fast)

    # ids and values whole at any width; one record a line outside a terminal (issue 41)
    cols = [Column("", whole=True), Column("id", whole=True), Column("valid", whole=True),
            Column("name"), Column("kind"), Column("target"), Column("created"),
            Column("spec hash")]  # fmt: skip
    listed = [
        [
            f"#{i}",
            safe_markup(e.id),
            "–" if e.valid is None else ("yes" if e.valid else "[red]no[/]"),
            safe_markup(e.name),
            *(safe_markup(x) for x in _kind_target(e)),
            safe_markup(e.created or ""),
            safe_markup(e.spec_hash or ""),
        ]
        for i, e in enumerate(c.experiments)
    ]
    print_records(out, cols, listed, title="experiments (#0 is the baseline)")
    infos = {m.metric: m for m in c.metric_info}
    # the family's key metrics are shown by default; without any, every one is
    keyed = any(m.metric in c.key_metrics for m in c.metric_info)
    show_all = show_all or not keyed
    scales = _scales(c)
    for p in c.points:
        rows: list[MetricComparison] = [
            m for m in p.metrics if show_all or m.metric in c.key_metrics or m.significant
        ]
        if not rows:
            continue
        pcols = [Column("metric", whole=True), Column("#0", whole=True, justify="right")]
        for i in range(1, len(c.experiments)):
            pcols.append(Column(f"#{i}", whole=True, justify="right"))
            pcols.append(Column(f"#{i} vs #0", whole=True, justify="right"))
        cells_of: list[list[str]] = []
        for m in rows:
            info = infos[m.metric]
            vals = {v.experiment: v for v in m.values}
            diffs = {d.experiment: d for d in m.diffs}
            cells = [
                f"{safe_markup(m.metric)} [dim]({safe_markup(info.unit)})[/]",
                _cell(vals.get(c.baseline), info.unit),
            ]
            for e in c.experiments[1:]:
                cells += [
                    _cell(vals.get(e.id), info.unit),
                    _change(
                        diffs.get(e.id),
                        vals.get(c.baseline),
                        vals.get(e.id),
                        scales[m.metric],
                        c.settings.alpha,
                    ),
                ]
            cells_of.append(cells)
        print_records(out, pcols, cells_of, title=f"point {safe_markup(p.key)}")
    for k, keys in c.unmatched.items():
        out.print(
            f"[yellow]not compared[/]: {safe_markup(k)} points {safe_markup(', '.join(keys))}"
        )
    for n in c.notes:
        out.print(f"[dim]note: {safe_markup(n)}[/]")
    sig = c.significant()
    s = c.settings
    out.print(
        f"{len(sig)} significant difference(s) (Benjamini-Hochberg adjusted p < {s.alpha:g} and "
        f"a change of at least {s.min_effect * 100:g}%); values: mean over "
        + ("trials" if keyed else "samples")
        + " ± 95% CI"
        + ("" if show_all else "; --all shows every metric")
        + ("; * = per-job samples down-sampled" if c.downsampled else "")
    )


def cmd_compare(args: argparse.Namespace, ui: object = None) -> int:
    """``gridbench compare`` (declared in :mod:`gridbench.cli.declared`)."""
    from gridbench.compare.dispatch import compare_runs

    c = compare_runs(
        _root(args),
        args.experiments,
        metrics=args.metric or None,
        samples=not args.no_samples,
        settings=_settings(args),
    )
    if args.json:
        print(json.dumps(c.to_dict(), indent=1, allow_nan=False))
    else:
        render_comparison(c, console, show_all=args.all or bool(args.metric))
    regressed = any(d.verdict == "regressed" for _, _, d in c.significant())
    return EXIT_REGRESSION if args.fail_on_regression and regressed else EXIT_OK


def render_history(h: History, out: Console) -> None:
    """One row per run (oldest first), one column per point; significant changes highlighted."""
    from gridbench.report.records_table import Column, print_records  # (the CLI starts fast)

    what = f"{safe_markup(h.metric)} across runs of '{safe_markup(h.name)}'"
    cols = [Column("experiment", whole=True), Column("created"), Column("same config")]
    cols += [Column(safe_markup(key), whole=True, justify="right") for key in h.points]
    rows: list[list[str]] = []
    for e in h.entries:
        cells = [
            safe_markup(e.experiment) + (" [bold](ref)[/]" if e.experiment == h.reference else ""),
            safe_markup(e.created or ""),
            "yes" if e.same_config else "[yellow]no[/]",
        ]
        for key in h.points:
            v = e.values.get(key)
            d = e.vs_previous.get(key)
            text = _cell(v, "")
            if d is not None and d.significant:
                colour = COLOURS.get(d.verdict, "yellow")
                text = f"[bold {colour}]{text} {WORDS.get(d.verdict, d.verdict)}[/]"
            cells.append(text)
        rows.append(cells)
    print_records(out, cols, rows, title=f"{what} ({h.better} is better)")
    for k, why in h.skipped.items():
        out.print(f"[yellow]skipped[/] {safe_markup(k)}: {safe_markup(why)}")


def cmd_history(args: argparse.Namespace, ui: object = None) -> int:
    """``gridbench history`` (declared in :mod:`gridbench.cli.declared`)."""
    from gridbench.compare.dispatch import history_of

    h = history_of(_root(args), args.experiment, args.metric, settings=_settings(args))
    if args.json:
        print(json.dumps(h.to_dict(), indent=1, allow_nan=False))
    else:
        render_history(h, console)
    return EXIT_OK
