"""The experiment spec's blocks and :class:`ExperimentBase`, every field of a spec with
``load`` as the common part of every load model's spec: what runners and load models read.
:class:`gridbench.jobflow.spec.model.ExperimentSpec` adds the union of the registered load
models' specs (so it sits above the load models; these blocks sit below them).

Pydantic models with forbid-extra, so typos are caught with a fix.

Durations are seconds (strings like ``30s`` or ``2m`` accepted); rates are stored in jobs
per second (a bare number in the YAML means jobs per minute, the seeds' unit).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from gridbench.hosts.sampling.spec import SamplingSpec
from gridbench.jobflow.specbase.load import LoadBase, Strict
from gridbench.jobflow.specbase.units import Rate, parse_rate
from gridbench.specload import SpecName
from gridbench.testplan import TestPlan
from gridbench.thresholds import ThresholdSpec  # one model for all families
from gridbench.units import Duration, PositiveDuration, Size


class BackendSpec(Strict):
    """Which system to test; ``options`` go to the backend unchanged."""

    type: str = Field(description="backend name from the registry (local, reference, null, ...)")
    options: dict[str, Any] = Field(default_factory=dict)


class JobSpec(Strict):
    """What each job runs."""

    command: list[str] = Field(
        default_factory=lambda: ["/bin/true"],
        min_length=1,
        description="the program and its arguments (never through a shell)",
    )
    runtime: Duration | None = Field(
        default=None, description="job run time for simulating backends (reference, null)"
    )
    fail_fraction: float = Field(default=0.0, ge=0.0, le=1.0)
    application: str = "gridbench"
    tasks: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="processes per job (Slurm --ntasks, PSI/J process_count); "
        "unset: the backend's default",
    )
    nodes: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="nodes per job (Slurm --nodes, PSI/J node_count); unset: the backend's default",
    )

    input_size: Size | None = Field(
        default=None, description="bytes the job uploads before it runs (128k, 2M); staging"
    )
    input_files: int | None = Field(default=None, ge=0, le=10_000_000)
    output_size: Size | None = Field(
        default=None, description="bytes the job's output downloads after it ran; staging"
    )
    output_files: int | None = Field(default=None, ge=0, le=10_000_000)

    @field_validator("command")
    @classmethod
    def _program(cls, command: list[str]) -> list[str]:
        if not command[0].strip():
            raise ValueError("the program (the first item) is empty: name it, e.g. [/bin/true]")
        return command

    @model_validator(mode="after")
    def _size(self) -> JobSpec:
        if self.tasks is not None and self.nodes is not None and self.tasks < self.nodes:
            raise ValueError(
                f"job.tasks ({self.tasks}) is below job.nodes ({self.nodes}): every node "
                "needs at least one task; raise tasks or lower nodes"
            )
        return self


class CredentialRef(Strict):
    """Where a user's credential lives: an environment variable or a file, never the value."""

    env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    file: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one(self) -> CredentialRef:
        if (self.env is None) == (self.file is None):
            raise ValueError(
                "give exactly one of env (a variable name) or file (a path); "
                "the secret itself never goes into a spec"
            )
        return self


class UserSpec(Strict):
    """A virtual user: load is split among users by weight, results break down per user."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.@-]+$")
    account: str | None = Field(
        default=None,
        pattern=r"^[a-z_][a-z0-9_.-]*\$?$",
        description="local Unix account to submit as (slurm, sge, local; needs root)",
    )
    credential: CredentialRef | None = Field(
        default=None, description="token or proxy of this user (slurmrestd JWT, grid CE)"
    )
    weight: float = Field(default=1.0, gt=0, le=1e6)


class TrialSpec(Strict):
    duration: PositiveDuration | None = Field(default=None, description="submission window")
    jobs: int | None = Field(default=None, ge=1, description="or a job count")
    event_log: Literal["csv", "arrow"] = Field(
        default="arrow",
        description="the event log's format: arrow (events.arrows, columnar Arrow IPC "
        "batches; smaller and faster to analyse) or csv (events.csv, as older runs); "
        "'gridbench export RUN --format csv' gives a CSV of either",
    )


class WarmupSpec(Strict):
    method: Literal["fraction", "steady_state"] = "fraction"
    fraction: float = Field(default=0.15, ge=0.0, lt=1.0)


class ValiditySpec(Strict):
    """Limits of the validity rules that a spec may tune (docs/metrics.md, Validity)."""

    clock_factor: float = Field(
        default=0.1,
        gt=0.0,
        le=10.0,
        description="a clock-offset bound above this share of a segment's median latency "
        "invalidates the trial",
    )


class TimeoutSpec(Strict):
    submit: Annotated[Duration, Field(gt=0)] = 30.0
    drain: Duration = 120.0
    # one status call per interval: below 10 ms the client would poll itself to saturation
    status_interval: Annotated[Duration, Field(ge=0.01)] = 1.0
    status_max_duty: float = Field(
        default=0.25,
        ge=0.01,
        le=1.0,
        description="the largest share of the time status sweeps may take: after a sweep "
        "of t seconds the next waits at least t*(1-d)/d (1: always status_interval)",
    )
    settle: Duration = Field(default=0.0, description="extra wait for server-side reports")


class ScheduleSpec(Strict):
    """When trials run (METHODS 1.10: the seeds spread 10 repetitions over 24 hours).

    ``interleave`` runs round-robin over the points (p0 t0, p1 t0, …, p0 t1, …) instead of
    all of a point's trials in a row; ``pause`` is the least time from one trial's end to
    the next one's start; ``window`` spreads the starts: trial k of N starts no earlier
    than k·window/N after the first (and never sooner than ``pause`` after the previous).
    """

    interleave: bool = Field(default=True, description="round-robin over the points")
    pause: Annotated[Duration, Field(ge=0)] = Field(
        default=0.0, description="least gap between one trial's end and the next start"
    )
    window: Annotated[Duration, Field(gt=0)] | None = Field(
        default=None, description="spread the trials' starts evenly over this window"
    )


class CollectorSpec(Strict):
    type: Literal["edgi"] = "edgi"
    reports: list[str] | Literal["auto"] = "auto"
    poll: Duration = 5.0
    max_file_bytes: int = 32 * 1024 * 1024


class SafetySpec(Strict):
    max_rate: Rate = Field(default=parse_rate("100/s"))
    max_jobs: int = Field(default=100_000, ge=1)
    confirm_above: int = Field(default=10_000, ge=0, description="ask before more jobs than this")
    cancel_on_abort: bool = True


class ServerProcessSpec(Strict):
    """A server process whose CPU and RSS are sampled during each trial (never signalled).

    ``name`` is the process name as psutil reports it (``slurmctld``; every process of that
    name, found again at each sample so a restarted daemon is followed), or ``pid`` one
    process; ``label`` names it in the results (default: the name, or ``pid <n>``).
    """

    name: str | None = Field(default=None, min_length=1, max_length=255)
    pid: int | None = Field(default=None, gt=0, description="a process id (> 0)")
    label: str | None = Field(default=None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _one(self) -> ServerProcessSpec:
        if (self.name is None) == (self.pid is None):
            raise ValueError(
                "give exactly one of name (the process name, e.g. slurmctld) or pid "
                "(a process id), e.g. {name: slurmctld} or {pid: 1234, label: ARC}"
            )
        return self

    @property
    def shown(self) -> str:
        """The label in the results: ``label``, else the name, else ``pid <n>``."""
        return self.label or self.name or f"pid {self.pid}"


class ExperimentBase(Strict):
    """A whole experiment: system under test, workload, sweep, trials and checks
    (``load`` as its common fields; a validated spec is an ``ExperimentSpec``)."""

    name: SpecName
    description: str = ""
    backend: BackendSpec
    job: JobSpec = Field(default_factory=JobSpec)
    users: list[UserSpec] = Field(
        default_factory=list, description="virtual users sharing the load (MAPPER)"
    )
    load: LoadBase
    sweep: dict[str, list[Any]] = Field(default_factory=dict)
    trials: int = Field(default=1, ge=1, le=1000, strict=True)  # strict: true is no count
    trial: TrialSpec = Field(default_factory=TrialSpec)
    schedule: ScheduleSpec | None = Field(
        default=None,
        description="interleave points and trials, with a pause, over a window (METHODS 1.10)",
    )
    warmup: WarmupSpec = Field(default_factory=WarmupSpec)
    validity: ValiditySpec = Field(default_factory=ValiditySpec)
    timeouts: TimeoutSpec = Field(default_factory=TimeoutSpec)
    collectors: list[CollectorSpec] = Field(default_factory=list)
    thresholds: list[ThresholdSpec] = Field(default_factory=list)
    plan: TestPlan | None = Field(
        default=None, description="the IEEE 829 test plan: items, features, approach, criteria"
    )
    safety: SafetySpec = Field(default_factory=SafetySpec)
    server_processes: list[ServerProcessSpec] = Field(
        default_factory=list,
        description="server processes (by name or pid) whose CPU and RSS are sampled",
    )
    sampling: SamplingSpec | None = Field(
        default=None,
        description="hosts sampled during the run (CPU, load, memory, disk, network; "
        "named processes), each trial a phase (docs/hosts.md)",
    )

    @model_validator(mode="after")
    def _check_size(self) -> ExperimentBase:
        self._check_load()  # the load model's own checks come first
        names = [u.name for u in self.users]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"users: names must be unique; repeated: {', '.join(dup)}")
        shown = [p.shown for p in self.server_processes]
        dup = sorted({n for n in shown if shown.count(n) > 1})
        if dup:
            raise ValueError(
                f"server_processes: labels must be unique; repeated: {', '.join(dup)} "
                "(give each entry its own label)"
            )
        for key, values in self.sweep.items():
            if not values:
                raise ValueError(f"sweep.{key} is empty; give at least one value")
        return self

    def _check_load(self) -> None:
        """The load model's cross-field checks (``ExperimentSpec`` knows the models)."""
