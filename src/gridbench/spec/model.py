"""The experiment spec: pydantic models with forbid-extra, so typos are caught with a fix.

Durations are seconds (strings like ``30s`` or ``2m`` accepted); rates are stored in jobs
per second (a bare number in the YAML means jobs per minute, the seeds' unit).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from gridbench.spec.units import parse_duration, parse_rate
from gridbench.testplan import TestPlan
from gridbench.thresholds import ThresholdSpec as ThresholdSpec  # one model for all families

Duration = Annotated[float, BeforeValidator(parse_duration)]
Rate = Annotated[float, BeforeValidator(parse_rate)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendSpec(_Strict):
    """Which system to test; ``options`` go to the backend unchanged."""

    type: str = Field(description="backend name from the registry (local, reference, null, ...)")
    options: dict[str, Any] = Field(default_factory=dict)


class JobSpec(_Strict):
    """What each job runs."""

    command: list[str] = Field(default_factory=lambda: ["/bin/true"])
    runtime: Duration | None = Field(
        default=None, description="job run time for simulating backends (reference, null)"
    )
    fail_fraction: float = Field(default=0.0, ge=0.0, le=1.0)
    application: str = "gridbench"


class CredentialRef(_Strict):
    """Where a user's credential lives: an environment variable or a file, never the value."""

    env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    file: str | None = None

    @model_validator(mode="after")
    def _one(self) -> CredentialRef:
        if (self.env is None) == (self.file is None):
            raise ValueError(
                "give exactly one of env (a variable name) or file (a path); "
                "the secret itself never goes into a spec"
            )
        return self


class UserSpec(_Strict):
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


class RateStep(_Strict):
    rate: Rate
    duration: Duration


class RampSpec(_Strict):
    start: Rate = Field(alias="from")
    end: Rate = Field(alias="to")
    duration: Duration
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class BurstSpec(_Strict):
    requests: int = Field(default=100, ge=1)
    threads: list[int] = Field(default_factory=lambda: [1, 10, 20, 33])


class LoadSpec(_Strict):
    """How submissions are offered (METHODS 1.5-1.9)."""

    model: Literal["open", "sustain", "batch", "probe"] = "open"
    # open loop
    arrival: Literal["uniform", "poisson"] = "uniform"
    rate: Rate | None = None
    schedule: list[RateStep] | None = None
    ramp: RampSpec | None = None
    pool: int = Field(default=64, ge=1, le=100_000, description="concurrent submitters")
    max_lateness: Duration = Field(default=5.0, description="later than this: dropped")
    late_threshold: Duration = Field(default=0.1, description="later than this: counted late")
    agents: int = Field(
        default=1, ge=1, le=256, description="submitter agents sharing the schedule"
    )
    # sustain (MAPPER response-time benchmark)
    users: int = Field(default=10, ge=1)
    jobs_per_user: int = Field(default=5, ge=1)
    sleep_coef: Duration = 10.0
    # batch (MAPPER throughput benchmark)
    jobs: int | None = Field(default=None, ge=1)
    submitters: int = Field(default=10, ge=1)
    bulk: int = Field(
        default=1, ge=1, le=10_000, description="jobs per submission call (job arrays; batch)"
    )
    # probe (single-operation overhead)
    operation: Literal["submit", "status", "cancel"] = "submit"
    count: int = Field(default=30, ge=1)
    gap: Duration = 2.0
    burst: BurstSpec | None = None
    seed: int = 1

    @model_validator(mode="after")
    def _check_open(self) -> LoadSpec:
        if self.bulk > 1 and self.model != "batch":
            raise ValueError(
                "load.bulk (jobs per submission call) needs model: batch, where jobs are not "
                "tied to an arrival time; leave it at 1 for the other models"
            )
        if self.model == "open":
            given = [x for x in (self.rate, self.schedule, self.ramp) if x is not None]
            if len(given) != 1:
                raise ValueError(
                    "the open model needs exactly one of rate, schedule or ramp "
                    "(e.g. rate: 60 for 60 jobs/min)"
                )
        return self


class TrialSpec(_Strict):
    duration: Duration | None = Field(default=None, description="submission window")
    jobs: int | None = Field(default=None, ge=1, description="or a job count")


class WarmupSpec(_Strict):
    method: Literal["fraction", "steady_state"] = "fraction"
    fraction: float = Field(default=0.15, ge=0.0, lt=1.0)


class TimeoutSpec(_Strict):
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


class CollectorSpec(_Strict):
    type: Literal["edgi"] = "edgi"
    reports: list[str] | Literal["auto"] = "auto"
    poll: Duration = 5.0
    max_file_bytes: int = 32 * 1024 * 1024


class SafetySpec(_Strict):
    max_rate: Rate = Field(default=parse_rate("100/s"))
    max_jobs: int = Field(default=100_000, ge=1)
    confirm_above: int = Field(default=10_000, ge=0, description="ask before more jobs than this")
    cancel_on_abort: bool = True


class ExperimentSpec(_Strict):
    """A whole experiment: system under test, workload, sweep, trials and checks."""

    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    backend: BackendSpec
    job: JobSpec = Field(default_factory=JobSpec)
    users: list[UserSpec] = Field(
        default_factory=list, description="virtual users sharing the load (MAPPER)"
    )
    load: LoadSpec
    sweep: dict[str, list[Any]] = Field(default_factory=dict)
    trials: int = Field(default=1, ge=1, le=1000)
    trial: TrialSpec = Field(default_factory=TrialSpec)
    warmup: WarmupSpec = Field(default_factory=WarmupSpec)
    timeouts: TimeoutSpec = Field(default_factory=TimeoutSpec)
    collectors: list[CollectorSpec] = Field(default_factory=list)
    thresholds: list[ThresholdSpec] = Field(default_factory=list)
    plan: TestPlan | None = Field(
        default=None, description="the IEEE 829 test plan: items, features, approach, criteria"
    )
    safety: SafetySpec = Field(default_factory=SafetySpec)

    @model_validator(mode="after")
    def _check_size(self) -> ExperimentSpec:
        m = self.load.model
        open_rate = m == "open" and self.load.schedule is None and self.load.ramp is None
        if open_rate and self.trial.duration is None and self.trial.jobs is None:
            raise ValueError("trial needs a duration or a job count (e.g. trial: {duration: 60s})")
        if m == "sustain" and self.trial.duration is None:
            raise ValueError("the sustain model needs trial.duration")
        if m == "batch" and self.load.jobs is None and self.trial.jobs is None:
            raise ValueError("the batch model needs load.jobs (N jobs to submit)")
        if m == "sustain" and self.users and self.load.users < len(self.users):
            raise ValueError(
                f"load.users is {self.load.users} but {len(self.users)} users are declared: "
                "some would get no virtual user; raise load.users"
            )
        names = [u.name for u in self.users]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"users: names must be unique; repeated: {', '.join(dup)}")
        for key, values in self.sweep.items():
            if not values:
                raise ValueError(f"sweep.{key} is empty; give at least one value")
        return self
