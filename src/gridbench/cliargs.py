"""Command-line arguments every family's commands share, spelled once."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gridbench.commandline import DEFAULT_PORT as DEFAULT_PORT
from gridbench.commandline import RESULTS, RUN, SERVE_ARGS, spec_args
from gridbench.commandline import RUN_HELP as RUN_HELP
from gridbench.errors import EXIT_OK, GridbenchError

if TYPE_CHECKING:
    from gridbench.family import Executes, Ui
    from gridbench.hosts.sampling.phases import StepSampling
    from gridbench.hosts.sampling.spec import SamplingSpec
    from gridbench.store.layout import RunDir

#: A family's command: the parsed arguments and what the CLI lends it -> the exit code.
FamilyCommand = Callable[[argparse.Namespace, "Ui"], int]


# A command's name, help and arguments are declared (gridbench.commandline); these add the
# shared ones to a parser made by hand (a plugin's add_commands), spelled the same.
def add_results_arg(p: argparse.ArgumentParser) -> None:
    """``--results DIR``: the results root."""
    RESULTS.add_to(p)


def add_spec_args(p: argparse.ArgumentParser, *, what: str, example: str) -> None:
    """The spec file and repeatable ``--set KEY=VALUE`` overrides."""
    for a in spec_args(what=what, example=example):
        a.add_to(p)


def add_run_arg(p: argparse.ArgumentParser) -> None:
    """A run: a results directory, an id from ``gridbench list``, or ``latest``."""
    RUN.add_to(p)


def add_serve_args(p: argparse.ArgumentParser) -> None:
    """The web server's options (``gridbench serve``, ``gridbench study serve``)."""
    for a in SERVE_ARGS:
        a.add_to(p)


def report_command(args: argparse.Namespace, ui: Ui) -> int:
    """``gridbench <family> report RUN``: the same as ``gridbench report RUN``, kept under
    each family for its users' habit."""
    from gridbench.store.catalogue import resolve_run

    return ui.analyze_and_show(resolve_run(args.run, ui.results_root(args)).path)


def print_json(doc: Mapping[str, Any]) -> int:
    """``plan --json``: the plan document on standard output (never through the console's
    markup), one space of indent."""
    print(json.dumps(doc, indent=1))
    return EXIT_OK


@dataclass(frozen=True, slots=True)
class PlanTable:
    """A ``plan`` command's steps as a table: ``title`` and ``rows`` are safe for markup
    already; the ``right`` columns are aligned right; ``summary`` is the line under it."""

    title: str
    columns: tuple[str, ...]
    right: frozenset[str]
    rows: Iterable[tuple[str, ...]]
    summary: str


def show_plan(ui: Ui, plan: PlanTable, *, doc: Mapping[str, Any], as_json: bool) -> int:
    """A ``plan`` command's output: ``doc`` as JSON (``--json``), else the table of steps,
    the summary, and that nothing was started."""
    if as_json:
        return print_json(doc)
    from rich.table import Table

    table = Table(title=plan.title)
    for col in plan.columns:
        table.add_column(col, justify="right" if col in plan.right else "left")
    for row in plan.rows:
        table.add_row(*row)
    ui.console.print(table)
    ui.console.print(plan.summary)
    ui.console.print("[dim]dry run: nothing was started[/]")
    return EXIT_OK


# -- a family's run command -----------------------------------------------------------


#: Seconds between progress lines when the output is not a terminal (a file, a CI log).
LOG_EVERY_S = 5.0


@contextmanager
def step_progress(ui: Ui, label: str, total: int) -> Iterator[Callable[[str], None]]:
    """A progress bar for a family's run command: ``step(msg)`` marks the previous step
    done and shows ``msg`` (text from data, shown safely); leaving marks the last one.
    When the output is not a terminal, one timestamped line every :data:`LOG_EVERY_S`
    seconds instead (a bar would show only at the end)."""
    if not ui.console.is_terminal:
        with line_progress(ui, label, total) as step:
            yield step
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from gridbench.fmt import safe_markup

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=ui.console,
    )
    with progress:
        task = progress.add_task(label, total=total, detail="")
        started = False

        def step(msg: str) -> None:
            nonlocal started
            if started:
                progress.advance(task)
            started = True
            progress.update(task, detail=safe_markup(msg))

        try:
            yield step
        finally:
            progress.advance(task)


@contextmanager
def line_progress(ui: Ui, label: str, total: int) -> Iterator[Callable[[str], None]]:
    """Progress as plain lines for a log: ``HH:MM:SS label i/total (elapsed) step``, the
    first step at once, then at most one line every :data:`LOG_EVERY_S` seconds."""
    from gridbench.fmt import visible

    start = time.monotonic()
    last = -LOG_EVERY_S
    done = 0

    def line(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        elapsed = time.monotonic() - start
        ui.console.print(
            f"{stamp} {label} {done}/{total} ({elapsed:.0f} s) {visible(msg)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def step(msg: str) -> None:
        nonlocal last, done
        now = time.monotonic()
        if now - last >= LOG_EVERY_S:
            last = now
            line(msg)
        done += 1

    try:
        yield step
    except BaseException as exc:
        # at the step it reached; the error follows (Ctrl-C: "interrupted")
        line("interrupted" if isinstance(exc, KeyboardInterrupt) else "stopped")
        raise
    done = total
    line("done")


def step_sampling(block: SamplingSpec | None) -> StepSampling | None:
    """The hosts a spec's ``sampling:`` block names, for :func:`run_and_show` (looked up
    now: a host missing from its inventory is a SpecError before the run); None without
    the block."""
    if block is None:
        return None
    from gridbench.hosts.sampling.phases import StepSampling

    return StepSampling(block)


def run_and_show(
    ui: Ui,
    label: str,
    total: int,
    runner: Callable[[Callable[[str], None]], Executes],
    *,
    interrupted: str,
    failures: tuple[type[GridbenchError], ...] = (GridbenchError,),
    sampling: StepSampling | None = None,
) -> int:
    """A family's run command: ``runner(step)`` executed under a progress bar of ``total``
    steps, then :func:`show_run`. Once the results folder exists, an error of ``failures``
    is shown after the report of what was measured, and Ctrl-C prints
    "interrupted: ``interrupted``, results so far kept" and reports them; before, both
    propagate. ``sampling``: the spec's hosts sampled during the run, each step a phase
    (docs/hosts.md)."""
    failure: GridbenchError | None = None
    made: Executes | None = None
    try:  # Ctrl-C leaves the progress as stopped, never as "done" (issue 41)
        with step_progress(ui, label, total) as bar:

            def step(msg: str) -> None:
                bar(msg)
                if sampling is not None and made is not None and made.run is not None:
                    sampling.step(made.run.path, msg)

            made = runner(step if sampling is not None else bar)
            try:
                made.execute()
            except failures as exc:
                if made.run is None:
                    raise
                failure = exc  # the run is marked failed; what it measured is still reported
            finally:
                if sampling is not None:
                    sampling.close()
    except KeyboardInterrupt:
        if made is None or made.run is None:
            raise
        ui.console.print(f"[yellow]interrupted: {interrupted}, results so far kept[/]")
    assert made is not None
    return show_run(ui, made.run, failure)


def show_run(ui: Ui, run: RunDir | None, failure: BaseException | None) -> int:
    """After a family's run command: where the results are, their analysis and report
    (the exit code), then the error that stopped the run, if one did."""
    from gridbench.fmt import safe_markup

    if run is None:
        raise GridbenchError("nothing was run")
    ui.console.print(f"results: [cyan]{safe_markup(run.path)}[/]")
    code = ui.analyze_and_show(run.path)
    if failure is not None:
        ui.err_console.print(f"[red]error[/]: {safe_markup(failure)}")
    return code
