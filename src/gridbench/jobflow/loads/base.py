"""The load-model seam of job flow: what one load model (open, sustain, batch, probe) is.

A load model is one module under ``gridbench/jobflow/loads/`` holding

* its spec: a pydantic model of the ``load:`` block (a subclass of :class:`LoadBase`, with
  ``model: Literal["<name>"]``); the spec's ``load`` is the union of every registered
  model's spec, discriminated on ``model``;
* its plan contribution (jobs per trial, seconds per trial, peak offered rate);
* its runner: one coroutine taking a :class:`TrialContext`;
* its analysis: the trial's ``model`` object in metrics.json and the point's
  ``summary.model`` (closed models), plus the few per-model switches of the generic
  analysis (offered rate, users by agent, growth quantity, validity);
* a reference to its report sections.

and one registration in :data:`gridbench.jobflow.loads.LOAD_MODELS`.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from gridbench.jobflow.run.open_loop import submit_one
from gridbench.units import Duration

if TYPE_CHECKING:  # runtime imports would cycle: the spec imports the registry
    import polars as pl

    from gridbench.jobflow.backends.base import Backend, JobRequest
    from gridbench.jobflow.events.chain import StageChain
    from gridbench.jobflow.run.agent_pool import AgentPools
    from gridbench.jobflow.run.observer import TrialProgress
    from gridbench.jobflow.run.recorder import Recorder
    from gridbench.jobflow.run.tracker import StatusTracker
    from gridbench.jobflow.spec.model import ExperimentSpec
    from gridbench.sections import Section


#: The model of a ``load:`` block that names none (here, not in the registry, so that
#: analysis can read it without importing every model: the models import analysis).
DEFAULT_MODEL = "open"


class Strict(BaseModel):
    """A spec block: unknown fields are errors (typos are caught), values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentsBlock(Strict):
    """``load.agents`` as a block: agents in other processes or on other hosts, run on Dask
    (exactly one of ``processes``, ``hosts`` or ``scheduler``; see docs/spec.md)."""

    processes: int | None = Field(default=None, ge=1, le=256)
    hosts: list[str] | None = Field(default=None, min_length=1)
    venv: str | None = None  # the remote venv (hosts): its bin/python runs the agent
    scheduler: str | None = None  # tcp://host:port of a running Dask scheduler
    #: per agent (agent-0, agent-1, ...): environment variables set in its process before
    #: it builds its backend (its backend's client programs inherit them)
    env: dict[str, dict[str, str]] = Field(default_factory=dict)
    on_controller_loss: Literal["cancel", "keep"] = "cancel"
    heartbeat: Duration = Field(default=5.0, gt=0)  # no word this long: controller lost
    #: where agents on hosts/scheduler keep their logs (relative: under their home)
    workdir: str = ".gridbench/agents"
    ssh_options: dict[str, Any] = Field(default_factory=dict)  # asyncssh connect options

    @model_validator(mode="after")
    def _one_kind(self) -> AgentsBlock:
        given = [k for k in ("processes", "hosts", "scheduler") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "agents needs exactly one of processes, hosts or scheduler "
                "(e.g. agents: {processes: 2})"
            )
        if self.hosts is not None and not self.venv:
            raise ValueError(
                "agents.hosts needs venv: the path of the venv holding gridbench on every host"
            )
        if self.scheduler is not None and not self.scheduler.startswith(("tcp://", "tls://")):
            raise ValueError("agents.scheduler is an address like tcp://host:8786")
        bad = [k for k in self.env if not k.startswith("agent-")]
        if bad:
            raise ValueError(f"agents.env keys are agent names (agent-0, agent-1, ...), not {bad}")
        return self

    @property
    def kind(self) -> str:
        """processes | hosts | scheduler."""
        return "processes" if self.processes else "hosts" if self.hosts else "scheduler"


def _agents_kind(value: Any) -> str:
    """A mapping is a block, anything else a count (so an error names one form, not both)."""
    return "block" if isinstance(value, dict | AgentsBlock) else "count"


AgentsField = Annotated[
    Annotated[int, Tag("count")] | Annotated[AgentsBlock, Tag("block")],
    Discriminator(_agents_kind),
]


class LoadBase(Strict):
    """The fields every load model has (METHODS 1.5-1.9); a model's spec adds its own."""

    model: str
    late_threshold: Duration = Field(default=0.1, description="later than this: counted late")
    agents: AgentsField = Field(
        default=1,
        description="submitter agents sharing the schedule: a count (coroutines in this "
        "process) or a block (processes, hosts or a Dask scheduler)",
    )
    seed: int = 1

    @model_validator(mode="after")
    def _agent_count(self) -> LoadBase:
        if isinstance(self.agents, int) and not 1 <= self.agents <= 256:
            raise ValueError("agents is a count from 1 to 256, or a block (processes: N)")
        if not isinstance(self.agents, int) and self.model != "open":
            raise ValueError(
                f"agents as a block (processes, hosts, scheduler) runs the open model only, "
                f"not {self.model}; use a count (agents: 2) here"
            )
        return self

    @property
    def agent_count(self) -> int:
        """Agents known from the spec (coroutines, processes or hosts; 1 for a scheduler,
        whose workers are only counted at connect time)."""
        a = self.agents
        if isinstance(a, int):
            return a
        return a.processes or len(a.hosts or ()) or 1

    @property
    def remote_agents(self) -> AgentsBlock | None:
        """The block when agents run outside this process (on Dask), else None."""
        return self.agents if isinstance(self.agents, AgentsBlock) else None


L = TypeVar("L", bound=LoadBase)


def narrow(load: LoadBase, cls: type[L]) -> L:
    """``load`` as its model's spec class (a model's hooks only ever get their own spec)."""
    if not isinstance(load, cls):
        raise TypeError(f"expected a {cls.__name__}, got a {type(load).__name__}")
    return load


@dataclass(frozen=True)
class PlanEstimate:
    """What one trial of a point will do, as the plan shows it before anything runs."""

    jobs_per_trial: int | None  # None: open-ended (closed loop)
    seconds_per_trial: float
    peak_rate_per_s: float | None  # None: no offered rate (closed loop)


class RequestMaker(Protocol):
    """Job ``i``'s request; ``slot`` pins a sustain virtual user to a declared user."""

    def __call__(self, i: int, slot: int | None = None) -> JobRequest: ...


@dataclass(frozen=True)
class TrialContext:
    """Everything a runner needs for one trial; the common parts (event log, tracker,
    resources, collectors, safety, drain) stay with
    :func:`gridbench.jobflow.run.trial.run_trial`."""

    backend: Backend
    spec: ExperimentSpec  # the point's spec: its load, trial, job and timeouts
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
    trial_dir: Path | None = None  # where trial.json and events.csv are (agents' logs: ../..)
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
        return await submit_one(
            self.backend, req, rec, self.tracker, self.progress, self.submit_timeout_s, call=call
        )


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

    def check_spec(self, spec: ExperimentSpec) -> None:
        """Cross-field checks of a whole spec; raise ValueError with the message to show."""
        ...

    def check_backend(self, spec: ExperimentSpec, backend: Backend) -> None:
        """Offline checks that need the backend; raise SpecError."""
        ...

    def plan(self, spec: ExperimentSpec, drain_s: float) -> PlanEstimate:
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
    #: (path in a point summary, label, unit) of what growth fits follow; None: no fits
    growth: tuple[str, str, str] | None = None
    #: its report sections as 'module:builder', imported when asked (the job-flow report
    #: modules import this package, so a load model cannot import them when it loads)
    section_refs: tuple[str, ...] = ()

    def check_spec(self, spec: ExperimentSpec) -> None:
        """No cross-field checks."""

    def check_backend(self, spec: ExperimentSpec, backend: Backend) -> None:
        """Any backend will do."""

    def plan(self, spec: ExperimentSpec, drain_s: float) -> PlanEstimate:  # pragma: no cover
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
