"""What a load model is to the runner: the :class:`LoadModel` protocol (with defaults in
:class:`BaseLoadModel`), its plan contribution (:class:`PlanEstimate`) and the
:class:`TrialContext` that :func:`gridbench.jobflow.run.trial.run_trial` builds for its
runner. The models themselves live in :mod:`gridbench.jobflow.loads`, above this package.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gridbench.jobflow.run.open_loop import Submitter, submit_one
from gridbench.jobflow.run.requests import RequestMaker

if TYPE_CHECKING:
    import polars as pl

    from gridbench.jobflow.backends.base import Backend, JobRequest
    from gridbench.jobflow.events.chain import StageChain
    from gridbench.jobflow.run.agent_pool import AgentPools
    from gridbench.jobflow.run.observer import TrialProgress
    from gridbench.jobflow.run.recorder import Recorder
    from gridbench.jobflow.run.tracker import StatusTracker
    from gridbench.jobflow.specbase.load import LoadBase
    from gridbench.jobflow.specbase.model import ExperimentBase
    from gridbench.sections import Section


@dataclass(frozen=True)
class PlanEstimate:
    """What one trial of a point will do, as the plan shows it before anything runs."""

    jobs_per_trial: int | None  # None: open-ended (closed loop)
    seconds_per_trial: float
    peak_rate_per_s: float | None  # None: no offered rate (closed loop)


@dataclass(frozen=True)
class TrialContext:
    """Everything a runner needs for one trial; the common parts (event log, tracker,
    resources, collectors, safety, drain) stay with
    :func:`gridbench.jobflow.run.trial.run_trial`."""

    backend: Backend
    spec: ExperimentBase  # the point's spec: its load, trial, job and timeouts
    trial_id: str
    seed: int
    recorders: Sequence[Recorder]  # one per agent (load.agents; one when they are remote)
    tracker: StatusTracker
    progress: TrialProgress
    stop: asyncio.Event
    #: a request factory for about ``n`` jobs (``n`` sizes the pre-drawn failure flags)
    requests: Callable[[int], RequestMaker]
    info: dict[str, Any]  # trial.json as being written; a runner may add what it knows
    write_info: Callable[[], None]
    trial_dir: Path | None = None  # where trial.json and the event log are (agents' logs: ../..)
    agent_pools: AgentPools | None = None  # the experiment's agents' clusters (remote agents)

    @property
    def submit_timeout_s(self) -> float:
        """The time-out of one submission call."""
        return self.spec.timeouts.submit

    async def submit(
        self,
        req: JobRequest,
        rec: Recorder,
        call: Callable[[JobRequest], Awaitable[str]] | None = None,
    ) -> str | None:
        """Submit one job, stamped by ``rec`` (through ``call`` instead of the backend's
        ``submit`` when given: a held submission); the backend's id, ``None`` if it failed."""
        sub = Submitter(self.backend, rec, self.tracker, self.progress, self.submit_timeout_s)
        return await submit_one(sub, req, call=call)


#: A report-section builder: metrics.json in, its section(s) out (``None``: nothing to show).
SectionBuilder = Callable[[Mapping[str, Any]], "Section | Sequence[Section] | None"]


class LoadModel(Protocol):
    """One load model of job flow (see the module docstring)."""

    # read-only (properties) so that a class attribute of a narrower type satisfies them
    @property
    def name(self) -> str:
        """The spec's ``load.model`` value, the ``load_model`` of trial.json and metrics."""
        ...

    @property
    def spec(self) -> type[LoadBase]:
        """The pydantic model of its ``load:`` block."""
        ...

    @property
    def rate_based(self) -> bool:
        """It offers a rate: knee, bottleneck ratios, an offered rate estimated from the
        schedule."""
        ...

    @property
    def users_by_agent(self) -> bool:
        """A job without a ``user`` belongs to its submitting agent (users are agents)."""
        ...

    @property
    def reads_events(self) -> bool:
        """:meth:`trial_metrics` reads every event (else it is given only the few the
        analysis keeps: a model that reads none says so, and huge runs stream)."""
        ...

    def check_spec(self, spec: ExperimentBase) -> None:
        """Cross-field checks of a whole spec; raise ValueError with the message to show."""
        ...

    def check_backend(self, spec: ExperimentBase, backend: Backend) -> None:
        """Offline checks that need the backend; raise SpecError."""
        ...

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:
        """Jobs, seconds (``drain_s``: the expected drain after submitting) and peak rate."""
        ...

    async def run(self, ctx: TrialContext) -> None:
        """Submit (and for closed models: poll, probe) until done, stopped or failed."""
        ...

    def trial_metrics(self, events: pl.DataFrame, chain: StageChain) -> dict[str, Any] | None:
        """The trial's ``model`` object of metrics.json (``None``: none)."""
        ...

    def adjust_validity(
        self, validity: dict[str, Any], model: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The trial's validity, corrected for what does not apply to this model."""
        ...

    def summary(self, trials: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The point's ``summary.model`` from the trial objects it uses."""
        ...

    def growth_quantity(self, points: Sequence[Mapping[str, Any]]) -> tuple[str, str, str] | None:
        """(path in a point summary, label, unit) of the quantity growth fits follow."""
        ...

    def sections(self) -> Sequence[SectionBuilder]:
        """The builders of this model's report sections."""
        ...


class BaseLoadModel:
    """Defaults for the optional hooks; a load model subclasses this and overrides (a hook
    that only hands over to a module function is ``hook = staticmethod(function)``)."""

    name: str
    spec: type[LoadBase]
    rate_based: bool = False
    users_by_agent: bool = False
    reads_events: bool = False
    #: (path in a point summary, label, unit) of what growth fits follow; None: no fits
    growth: tuple[str, str, str] | None = None
    #: its report sections as 'module:builder', imported when asked (the job-flow report
    #: sits above the load models, so a load model cannot import it when it loads)
    section_refs: tuple[str, ...] = ()

    def check_spec(self, spec: ExperimentBase) -> None:
        """No cross-field checks."""

    def check_backend(self, spec: ExperimentBase, backend: Backend) -> None:
        """Any backend will do."""

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:  # pragma: no cover
        """Every model must say what a trial does."""
        raise NotImplementedError

    async def run(self, ctx: TrialContext) -> None:  # pragma: no cover
        """Every model must run."""
        raise NotImplementedError

    def trial_metrics(self, events: pl.DataFrame, chain: StageChain) -> dict[str, Any] | None:
        """No ``model`` object."""
        return None

    def adjust_validity(
        self, validity: dict[str, Any], model: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The generic validity applies as it is."""
        return validity

    def summary(self, trials: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """No ``summary.model``."""
        return None

    def growth_quantity(self, points: Sequence[Mapping[str, Any]]) -> tuple[str, str, str] | None:
        """:attr:`growth`, whatever the points."""
        return self.growth

    def sections(self) -> Sequence[SectionBuilder]:
        """The builders named by :attr:`section_refs`."""
        return tuple(_builder(ref) for ref in self.section_refs)


def _builder(ref: str) -> SectionBuilder:
    module, _, attr = ref.partition(":")
    builder: SectionBuilder = getattr(importlib.import_module(module), attr)
    return builder
