"""The model file (``gridbench.model/1``): a readable, editable YAML description of a chain.

Tiers in the order a job meets them: the client's hop to the CE, the CE (``concurrency``
servers, FIFO, optional ``queue_limit``), the CE -> bridge transfer (a delay), the bridge,
the worker pool (``slots``), then the CE's status-update policy that notices the end
(``sequential``: one call per tracked job; ``batched``: one call for all), and the client
seeing it. Every duration is a fitted distribution with its goodness of fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridbench.specload import SpecLoader, dump_yaml

SCHEMA = "gridbench.model/1"
DOCS = "docs/model.md"

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

    n: int = Field(ge=0)
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

    concurrency: int | None = Field(default=None, ge=1, le=10_000_000)
    concurrency_source: Literal["inferred", "declared"] = "declared"
    queue_limit: int | None = Field(default=None, ge=1)
    service: Duration


class Delay(_Strict):
    """A pure delay (no servers): a network hop."""

    delay: Duration


class Workers(_Strict):
    """The worker pool: ``slots`` jobs run at once (null: no limit seen) for ``runtime``."""

    slots: int | None = Field(default=None, ge=1, le=10_000_000)
    slots_source: Literal["inferred", "declared"] = "declared"
    runtime: Duration


class StatusUpdate(_Strict):
    """How the CE learns that a job ended (T6 -> T7)."""

    policy: Literal["sequential", "batched"]
    per_job_cost_s: float = Field(ge=0.0, le=3600.0, allow_inf_nan=False)
    interval_s: float = Field(gt=0.0, le=3600.0, allow_inf_nan=False)
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


class Tiers(_Strict):
    ce: Tier
    transfer: Delay
    bridge: Tier
    workers: Workers


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
    client: Client
    tiers: Tiers
    status_update: StatusUpdate
    failures: Failures = Field(default_factory=Failures)
    checks: list[Check] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _cv(self) -> ChainModel:
        # a fixed or exponential cv is implied; say so rather than silently ignore a typo
        for where, d in durations(self):
            if d.dist == "exponential" and d.cv not in (0.0, 1.0):
                raise ValueError(f"{where}: an exponential has cv 1, not {d.cv:g}")
        return self


def durations(m: ChainModel) -> list[tuple[str, Duration]]:
    """Every duration of the model with its place (for messages and fit uncertainty)."""
    t = m.tiers
    return [
        ("client.to_ce", m.client.to_ce),
        ("client.ack", m.client.ack),
        ("client.observe", m.client.observe),
        ("tiers.ce.service", t.ce.service),
        ("tiers.transfer.delay", t.transfer.delay),
        ("tiers.bridge.service", t.bridge.service),
        ("tiers.workers.runtime", t.workers.runtime),
    ]


LOADER = SpecLoader(
    ChainModel,
    what="a chain model",
    keys="schema:, client:, tiers: (ce, transfer, bridge, workers), status_update:",
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
    head = (
        "# A gridbench chain model (docs/model.md). Edit any value: concurrency, slots,\n"
        "# status_update.policy (sequential|batched), costs, distributions.\n"
    )
    return head + dump_yaml(data)
