"""What a family hands ``gridbench compare`` when its runs are sweeps (job flow): the
points of a run, each repetition's value of a figure, per-unit samples clustered by
repetition and counts (:class:`SweptComparable`); the generic engine in
:mod:`gridbench.compare.engine` runs the statistics. A family of flat figures uses
:class:`gridbench.family.Comparable` instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from gridbench.store.layout import RunDir, json_safe

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: The tests a swept figure can ask for (names as gridbench.compare.significance has them):
#: Welch over the repetitions; Welch or Mann-Whitney on per-unit samples clustered by
#: repetition; Fisher's exact test on pooled counts.
Test = Literal["welch-t", "welch-t-clustered", "mann-whitney-u-clustered", "fisher-exact"]


@dataclass(frozen=True)
class ExperimentMetrics:
    """One analysed experiment as a comparison sees it.

    ``metrics`` is its metrics.json, ``record`` its experiment.json. ``samples`` holds
    per-unit measurements (job flow: per-job latencies in seconds, pooled over a point's
    used trials): ``samples[point_index][sample_key]``, at most ``sample_cap`` values each
    (a seeded uniform sub-sample; ``samples_total`` has the count before the cap).
    ``sample_trials`` gives, per sample, the repetition (trial) it came from, for the
    clustered tests. Empty ``samples`` means per-repetition tests only.
    """

    id: str
    metrics: Mapping[str, Any]
    record: Mapping[str, Any] = field(default_factory=dict)
    samples: Mapping[int, Mapping[str, F64]] = field(default_factory=dict)
    samples_total: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    sample_trials: Mapping[int, Mapping[str, I64]] = field(default_factory=dict)
    sample_cap: int | None = None

    @property
    def name(self) -> str:
        return str(self.record.get("name") or self.metrics.get("experiment") or self.id)

    @property
    def spec_hash(self) -> str | None:
        return _text(self.record.get("spec_hash"))

    @property
    def created(self) -> str | None:
        return _text(self.record.get("created"))

    @property
    def backend(self) -> str | None:
        return _text(self.record.get("backend"))

    @property
    def load_model(self) -> str | None:
        return _text(self.metrics.get("load_model") or self.record.get("load_model"))

    @property
    def valid(self) -> bool | None:
        v = self.metrics.get("validity")
        return bool(v.get("valid")) if isinstance(v, Mapping) else None

    @property
    def downsampled(self) -> bool:
        """Whether any per-unit sample was cut to ``sample_cap``."""
        return any(
            n > self.samples[p][k].size
            for p, per in self.samples_total.items()
            for k, n in per.items()
            if p in self.samples and k in self.samples[p]
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe identity of the experiment (no metrics, no samples)."""
        out: dict[str, Any] = json_safe(self.summary())
        return out

    def summary(self) -> dict[str, Any]:
        """The identity of the experiment for tables and JSON (no metrics)."""
        return {
            "id": self.id,
            "name": self.name,
            "backend": self.backend,
            "load_model": self.load_model,
            "created": self.created,
            "spec_hash": self.spec_hash,
            "status": self.record.get("status"),
            "valid": self.valid,
            "per_job_samples": bool(self.samples),
            "downsampled": self.downsampled,
        }


def _text(v: Any) -> str | None:
    """``v`` as text; None when it is missing or empty."""
    return str(v) if v else None


@dataclass(frozen=True, slots=True)
class SweptFigure:
    """What a figure of a swept comparison is, and how its runs are tested."""

    key: str  # e.g. "latency.overall.mean"
    label: str
    unit: str
    higher_is_better: bool
    #: the test when the data it needs are there (else Welch over the repetitions)
    test: Test


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One point of a run's sweep, matched across runs by ``key``."""

    key: str  # the swept values, e.g. "rate=4/s"
    values: Mapping[str, Any]
    x: float | None  # where charts put it (job flow: the offered rate), None: by key
    index: int  # the point's index in its run
    data: Mapping[str, Any]  # the family's own record of the point, handed back to it


@dataclass(frozen=True, slots=True)
class UnitSamples:
    """Per-unit values (per-job latencies) pooled over a point's repetitions."""

    values: F64
    repetitions: I64  # the repetition (trial) each value came from
    total: int  # the count before down-sampling


@dataclass(frozen=True, slots=True)
class Measure:
    """One run's measurements of one figure at one point."""

    repeats: F64  # one value per repetition (trial)
    units: UnitSamples | None = None
    counts: tuple[int, int] | None = None  # (failed, total) for a proportion test


@runtime_checkable
class SweptComparable(Protocol):
    """A family whose runs are compared point by point over a sweep, each figure with its
    per-repetition values and, where the family has them, per-unit samples or counts
    (``gridbench compare``/``history`` prefer this to :class:`Comparable`)."""

    #: the figures the terminal shows by default (plus every significant one)
    key_figures: tuple[str, ...]
    #: what ``history --metric`` accepts, for the error when it names nothing
    history_fix: str

    def load_compared(
        self, run: RunDir, *, samples: bool, max_samples: int | None
    ) -> ExperimentMetrics:
        """An analysed run, with per-unit samples (at most ``max_samples`` per point and
        sample key) when ``samples``; ResultsError when it is not analysed or unreadable."""
        ...

    def check_compatible(self, runs: Sequence[ExperimentMetrics]) -> None:
        """ResultsError when the runs cannot be compared at all (e.g. other load models)."""
        ...

    def swept_figures(self, runs: Sequence[ExperimentMetrics]) -> list[SweptFigure]:
        """The figures every run has, in the order they are shown."""
        ...

    def sweep_points(self, run: ExperimentMetrics) -> list[SweepPoint]:
        """The run's points, in index order."""
        ...

    def measure(self, run: ExperimentMetrics, point: SweepPoint, figure: SweptFigure) -> Measure:
        """The run's measurements of ``figure`` at ``point``."""
        ...

    def comparison_notes(
        self, runs: Sequence[ExperimentMetrics], max_samples: int | None
    ) -> list[str]:
        """The family's notes on a comparison (down-sampling, missing samples)."""
        ...

    def history_values(self, run: ExperimentMetrics, metric: str) -> dict[str, F64]:
        """Point key -> per-repetition values of ``metric`` (a single value for a
        point-level or run-level one); empty when it names nothing in the run."""
        ...

    def history_higher_is_better(self, metric: str) -> bool:
        """The better direction of a ``history`` metric."""
        ...
