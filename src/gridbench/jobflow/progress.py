"""Terminal progress for runs: an Observer drawing rich progress bars."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from gridbench.fmt import safe_markup
from gridbench.jobflow.run.observer import TrialProgress


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
        detail = (
            f"{p.phase}: done {p.completed} · in flight {p.in_flight} · failed {p.failed}"
            + (f" · late {p.late}" if p.late else "")
            + (f" · dropped {p.dropped}" if p.dropped else "")
        )
        self.progress.update(
            self._trial, completed=p.submitted + p.dropped, total=p.planned, detail=detail
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
