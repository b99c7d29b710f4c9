"""Progress notifications from the runner to whoever watches (CLI bars, dashboard)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class TrialProgress:
    """Counters of the running trial, updated in place by the runner."""

    trial_id: str
    planned: int | None
    submitted: int = 0
    acknowledged: int = 0
    completed: int = 0
    failed: int = 0
    dropped: int = 0
    late: int = 0
    in_flight: int = 0
    phase: str = "starting"  # starting | submitting | draining | collecting | done | aborted
    extra: dict[str, Any] = field(default_factory=dict)


class Observer(Protocol):
    def experiment_started(self, run_dir: str, total_trials: int) -> None: ...

    def trial_started(self, progress: TrialProgress) -> None: ...

    def trial_progress(self, progress: TrialProgress) -> None: ...

    def trial_finished(self, progress: TrialProgress) -> None: ...

    def message(self, text: str) -> None: ...


class NullObserver:
    def experiment_started(self, run_dir: str, total_trials: int) -> None:
        pass

    def trial_started(self, progress: TrialProgress) -> None:
        pass

    def trial_progress(self, progress: TrialProgress) -> None:
        pass

    def trial_finished(self, progress: TrialProgress) -> None:
        pass

    def message(self, text: str) -> None:
        pass
