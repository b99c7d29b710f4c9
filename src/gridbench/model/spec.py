"""The model file (``gridbench.model/1``): a readable, editable YAML description of a chain.

A chain is an ordered list of steps (``chain:``), each ending in a stage a run records:
a delay, a FIFO tier of ``concurrency`` servers (optional ``queue_limit``, optional
periodic ``dispatch``), a side stamp, or a status-update poll. The reference grid's
(EDGI's) chain keeps its own named form (``client:``, ``tiers:``, ``status_update:``):
the client's hop to the CE, the CE, the CE -> bridge transfer, the bridge, the worker pool
(``slots``), then the CE's status-update policy that notices the end (``sequential``: one
call per tracked job; ``batched``: one call for all), and the client seeing it; it runs as
one instance of the generic chain (gridbench.model.chain). Every duration is a fitted
distribution with its goodness of fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gridbench.model.steps.base import step_kind, step_kinds
from gridbench.specload import SpecLoader, dump_yaml

SCHEMA = "gridbench.model/1"
DOCS = "docs/model.md"

#: the shortest scheduler-pass or status-update interval a model may hold (0.1 ms): a pass
#: is an event of the simulation, and 1 ns passes never let one finish
MIN_INTERVAL_S = 1e-4
#: the most servers, queue places, files of a model's field (larger is no measured system)
MAX_COUNT = 10_000_000

#: the EDGI chain a model covers, in order (the stamps a run must have to be fitted)
STAGES = (
    "submit",
    "ce_entry",
    "submit_ack",
    "ce_submit",
    "bridge_entry",
    "bridge_submit",
    "bridge_done",
    "ce_done",
    "client_done",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Fit(_Strict):
    """How well a distribution fits its samples (Kolmogorov-Smirnov)."""

    n: int = Field(ge=0, le=10**12)
    ks_d: float | None = Field(default=None, ge=0.0, le=1.0)
    ks_p: float | None = Field(default=None, ge=0.0, le=1.0)
    tried: dict[str, float] = Field(default_factory=dict)


class Duration(_Strict):
    """A duration distribution in seconds: ``fixed``, ``exponential``, ``lognormal``
    or ``gamma`` with mean ``mean`` and coefficient of variation ``cv``."""

    dist: Literal["fixed", "exponential", "lognormal", "gamma"] = "fixed"
    mean: float = Field(ge=0.0, le=86_400.0, allow_inf_nan=False)
    cv: float = Field(default=0.0, ge=0.0, le=20.0, allow_inf_nan=False)
    fit: Fit | None = None


class Tier(_Strict):
    """A FIFO tier: ``concurrency`` servers (null: no limit seen), each job holding one for
    a ``service`` time."""

    concurrency: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    concurrency_source: Literal["inferred", "declared"] = "declared"
    queue_limit: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    queue_limit_source: Literal["inferred", "declared"] = "declared"
    service: Duration


class Delay(_Strict):
    """A pure delay (no servers): a network hop."""

    delay: Duration


class Workers(_Strict):
    """The worker pool: ``slots`` jobs run at once (null: no limit seen) for ``runtime``."""

    slots: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    slots_source: Literal["inferred", "declared"] = "declared"
    runtime: Duration


class StatusUpdate(_Strict):
    """How the CE learns that a job ended (T6 -> T7)."""

    policy: Literal["sequential", "batched"]
    per_job_cost_s: float = Field(ge=0.0, le=3600.0, allow_inf_nan=False)
    interval_s: float = Field(ge=MIN_INTERVAL_S, le=3600.0, allow_inf_nan=False)
    source: Literal["inferred", "declared"] = "declared"


class Client(_Strict):
    """The client's side: the submit call's hop to the CE, the acknowledgement after
    entry, and the delay until the client's status polling sees the end."""

    to_ce: Duration
    ack: Duration
    observe: Duration


class Failures(_Strict):
    """Shares of jobs that fail at submission and on the workers."""

    submit: float = Field(default=0.0, ge=0.0, le=1.0)
    job: float = Field(default=0.0, ge=0.0, le=1.0)


class Link(_Strict):
    """A staging transfer (the reference grid's ``ce.stage_in``, ``bridge.stage_out``): it
    waits for one of ``streams`` and holds it ``files·per_file_s + bytes/bandwidth_bps``
    plus ``overhead`` (what the formula leaves of the measured times). ``bytes`` and
    ``files`` are the fitted run's per job; ``job.output_size`` / ``job.input_size``
    sweeps replace them."""

    streams: int | None = Field(default=None, ge=1, le=1_000_000)
    streams_source: Literal["inferred", "declared"] = "declared"
    bandwidth_bps: float = Field(ge=1.0, le=1e15, allow_inf_nan=False)
    per_file_s: float = Field(default=0.0, ge=0.0, le=3600.0, allow_inf_nan=False)
    bytes: int = Field(default=0, ge=0, le=1 << 50)  # 1 PiB a job
    files: int = Field(default=0, ge=0, le=MAX_COUNT)
    overhead: Duration = Field(default_factory=lambda: Duration(mean=0.0))
    note: str = ""


class Tiers(_Strict):
    ce: Tier
    transfer: Delay
    bridge: Tier
    workers: Workers
    stage_in: Link | None = None  # held after the CE's service, before T3
    stage_out: Link | None = None  # after the worker (slot freed), before T6


class Dispatch(_Strict):
    """When a tier starts waiting jobs: at once (no ``dispatch``), or only at scheduler
    passes every ``interval_s`` (Slurm's main scheduler): a server freed between passes
    stays idle until the next one, unless the end itself triggers a pass (a share
    ``on_end_share`` of the instants jobs end at, ``on_end_delay_s`` later)."""

    interval_s: float = Field(ge=MIN_INTERVAL_S, le=3600.0, allow_inf_nan=False)
    on_end_share: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    on_end_delay_s: float = Field(default=0.0, ge=0.0, le=3600.0, allow_inf_nan=False)
    source: Literal["inferred", "declared"] = "declared"


class Step(_Strict):
    """One step of a generic chain; it ends in the stage ``stage``.

    ``delay``: a pure delay (``service``); ``tier``: FIFO through ``concurrency`` servers
    (null: no limit) for ``service``, stamping ``start_stage`` (if given) when a server
    takes the job; ``side``: a stamp ``service`` after the previous one that does not hold
    the job (an acknowledgement); ``poll``: the stage is stamped when a status update
    (``poll``) sees the job, tracked from ``tracked_from``. ``job: true`` marks the step
    where the job itself runs (``job.runtime`` replaces its service, plus ``overhead_s``,
    the launch and teardown measured around the run's declared runtime; job failures).
    """

    stage: str = Field(min_length=1, max_length=100)
    kind: str = Field(default="delay", description="a registered step kind (model/steps/)")
    source: str = Field(default="server", max_length=100)
    precision_ns: int = Field(default=1_000, ge=1, le=3_600 * 10**9)
    polled: bool = False
    service: Duration | None = None
    concurrency: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    concurrency_source: Literal["inferred", "declared"] = "declared"
    queue_limit: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    queue_limit_source: Literal["inferred", "declared"] = "declared"
    start_stage: str | None = Field(default=None, max_length=100)
    dispatch: Dispatch | None = None
    link: Link | None = None
    direction: Literal["in", "out"] | None = None
    job: bool = False
    overhead_s: float = Field(default=0.0, ge=0.0, le=3600.0, allow_inf_nan=False)
    poll: StatusUpdate | None = None
    tracked_from: str | None = Field(default=None, max_length=100)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        kinds = step_kinds()
        if v not in kinds:
            raise ValueError(f"{v!r} is not a step kind: give one of {', '.join(kinds)}")
        return v

    @model_validator(mode="after")
    def _complete(self) -> Step:
        kind = step_kind(self.kind)
        if kind.needs_service and self.service is None:
            raise ValueError(f"step {self.stage!r}: a {self.kind} step needs service: {{mean}}")
        if not kind.servers and (self.concurrency or self.queue_limit or self.dispatch):
            raise ValueError(f"step {self.stage!r}: only a tier has servers, queue or dispatch")
        kind.check(self)
        return self


class Check(_Strict):
    """One validation: the model predicted run ``run`` (not fitted on) this far off."""

    run: str
    checked: str
    errors: dict[str, float | str | None]
    within: bool


class FittedFrom(_Strict):
    run: str
    trials: list[str]
    rates_per_s: list[float]
    note: str = ""


class ChainModel(_Strict):
    """A job-flow chain model."""

    schema_: Literal["gridbench.model/1"] = Field(default="gridbench.model/1", alias="schema")
    name: str = Field(default="model", max_length=200)
    fitted_from: FittedFrom | None = None
    client: Client | None = None
    tiers: Tiers | None = None
    status_update: StatusUpdate | None = None
    chain: list[Step] | None = Field(default=None, min_length=1, max_length=60)
    failures: Failures = Field(default_factory=Failures)
    checks: list[Check] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _cv(self) -> ChainModel:
        edgi = (self.client, self.tiers, self.status_update)
        if self.chain is None and None in edgi:
            raise ValueError(
                "give chain: (a list of steps), or client:, tiers: and status_update: "
                "(the reference grid's chain)"
            )
        if self.chain is not None and edgi != (None, None, None):
            raise ValueError("give chain: or the reference grid's client/tiers, not both")
        if self.chain is not None:
            _check_chain(self.chain)
        # a fixed or exponential cv is implied; say so rather than silently ignore a typo
        for where, d in durations(self):
            if d.dist == "exponential" and d.cv not in (0.0, 1.0):
                raise ValueError(f"{where}: an exponential has cv 1, not {d.cv:g}")
        return self


def _check_chain(chain: list[Step]) -> None:
    seen = {"submit"}
    for i, st in enumerate(chain):
        for name in (st.start_stage, st.stage):
            if name is not None and name in seen:
                raise ValueError(f"chain[{i}]: stage {name!r} appears twice")
            if name is not None:
                seen.add(name)
        step_kind(st.kind).check_in_chain(chain, i, seen)
    for name, kind in step_kinds().items():
        if kind.once and sum(st.kind == name for st in chain) > 1:
            raise ValueError(f"a chain has at most one {name} step")
    if not step_kind(chain[-1].kind).holds_job:
        raise ValueError(
            f"the chain's last step holds the job: it cannot be a {chain[-1].kind} stamp"
        )


def durations(m: ChainModel) -> list[tuple[str, Duration]]:
    """Every duration of the model with its place (for messages and fit uncertainty)."""
    if m.chain is not None:
        return [
            (f"chain[{i}].service ({st.stage})", st.service)
            for i, st in enumerate(m.chain)
            if st.service is not None
        ]
    t, c = m.tiers, m.client
    assert t is not None and c is not None  # the validator: one form or the other
    links = [(f"tiers.{k}.overhead", v.overhead) for k, v in
             (("stage_in", t.stage_in), ("stage_out", t.stage_out)) if v is not None]  # fmt: skip
    return [
        *links,
        ("client.to_ce", c.to_ce),
        ("client.ack", c.ack),
        ("client.observe", c.observe),
        ("tiers.ce.service", t.ce.service),
        ("tiers.transfer.delay", t.transfer.delay),
        ("tiers.bridge.service", t.bridge.service),
        ("tiers.workers.runtime", t.workers.runtime),
    ]


LOADER = SpecLoader(
    ChainModel,
    what="a chain model",
    keys="schema:, chain: (steps), or client:, tiers: (ce, transfer, bridge, workers), "
    "status_update:",
    template="`gridbench model fit RUN` writes one",
    docs=DOCS,
)


def load_model(path: str | Path, overrides: list[str] | None = None) -> ChainModel:
    """Read and check a model file; every fault is one error naming the line and the fix."""
    model, _ = LOADER.load(path, overrides)
    return model


def model_text(model: ChainModel) -> str:
    """The model as YAML, with a header that says what it is."""
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if model.chain is not None:  # a step says what it has, not every default it keeps
        data["chain"] = [
            {"stage": st.stage, "kind": st.kind}
            | st.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
            for st in model.chain
        ]
    head = (
        "# A gridbench chain model (docs/model.md). Edit any value: concurrency, slots,\n"
        "# status_update.policy (sequential|batched), costs, distributions; a chain: step's\n"
        "# concurrency, queue_limit, dispatch.interval_s.\n"
    )
    return head + dump_yaml(data)
