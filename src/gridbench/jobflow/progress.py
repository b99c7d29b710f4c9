"""Progress of a job-flow run: rich bars in a terminal, or, when the output is a file or
a CI log (where a bar shows only at the end), one timestamped line every few seconds."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from gridbench.cliargs import LOG_EVERY_S
from gridbench.fmt import safe_markup, visible
from gridbench.jobflow.run.observer import TrialProgress


def observer_for(console: Console) -> RichObserver | LineObserver:
    """Bars for a terminal, timestamped lines for anything else."""
    return RichObserver(console) if console.is_terminal else LineObserver(console)


def _detail(p: TrialProgress) -> str:
    return (
        f"{p.phase}: done {p.completed} · in flight {p.in_flight} · failed {p.failed}"
        + (f" · late {p.late}" if p.late else "")
        + (f" · dropped {p.dropped}" if p.dropped else "")
    )


class RichObserver:
    """Experiment bar (trials) plus a bar for the running trial's submissions."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            refresh_per_second=8,
        )
        self._exp: TaskID | None = None
        self._trial: TaskID | None = None

    def __enter__(self) -> RichObserver:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def experiment_started(self, run_dir: str, total_trials: int) -> None:
        self.console.print(f"results: [cyan]{safe_markup(run_dir)}[/]")
        self._exp = self.progress.add_task("experiment", total=total_trials, detail="")

    def trial_started(self, p: TrialProgress) -> None:
        if self._trial is not None:
            self.progress.remove_task(self._trial)
        self._trial = self.progress.add_task(f"trial {p.trial_id}", total=p.planned, detail="")

    def trial_progress(self, p: TrialProgress) -> None:
        if self._trial is None:
            return
        self.progress.update(
            self._trial, completed=p.submitted + p.dropped, total=p.planned, detail=_detail(p)
        )

    def trial_finished(self, p: TrialProgress) -> None:
        self.trial_progress(p)
        if self._exp is not None:
            self.progress.advance(self._exp)
        if p.phase not in ("complete",):
            self.console.print(
                f"[yellow]trial {safe_markup(p.trial_id)}: {safe_markup(p.phase)}[/]"
            )

    def message(self, text: str) -> None:
        self.console.print(text)


class LineObserver:
    """Progress as plain lines for a log: each trial's start and end, and the running
    trial's counters at most every :data:`gridbench.cliargs.LOG_EVERY_S` seconds."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.total = 0
        self.done = 0
        self._last = -LOG_EVERY_S
        self._start = time.monotonic()

    def __enter__(self) -> LineObserver:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _line(self, text: str) -> None:
        elapsed = time.monotonic() - self._start
        self.console.print(
            f"{time.strftime('%H:%M:%S')} trials {self.done}/{self.total} ({elapsed:.0f} s) "
            + visible(text),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def experiment_started(self, run_dir: str, total_trials: int) -> None:
        self.total = total_trials
        self.console.print(f"results: {visible(run_dir)}", markup=False, highlight=False)

    def trial_started(self, p: TrialProgress) -> None:
        self._line(f"trial {p.trial_id} started")
        self._last = time.monotonic()

    def trial_progress(self, p: TrialProgress) -> None:
        now = time.monotonic()
        if now - self._last >= LOG_EVERY_S:
            self._last = now
            planned = "?" if p.planned is None else str(p.planned)
            self._line(f"trial {p.trial_id} {p.submitted + p.dropped}/{planned} {_detail(p)}")

    def trial_finished(self, p: TrialProgress) -> None:
        self.done += 1
        self._line(f"trial {p.trial_id} {p.phase}: done {p.completed} · failed {p.failed}")

    def message(self, text: str) -> None:
        self.console.print(text)
