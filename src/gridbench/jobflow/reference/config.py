"""Configuration of the reference grid: pydantic models, defaults = the demo default.

The defaults reproduce the EDGI story scaled to minutes: every tier is fast except the
CE's finishing stage, whose sequential status loop (CREAM's UpdateManager) costs
``per_job_cost_s`` per job in its list, so its capacity is about ``1 / per_job_cost_s``
jobs/s (about 2.9 jobs/s by default) and it falls behind above that rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gridbench.errors import SpecError
from gridbench.yamltext import parse_mapping


class _Strict(BaseModel):
    """Base: unknown keys are errors (a typo must not silently fall back to a default)."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


class Dist(_Strict):
    """A distribution of durations in seconds.

    ``fixed``: always ``mean``. ``exponential``: mean ``mean`` (``cv`` is 1 by nature).
    ``lognormal``: mean ``mean`` and coefficient of variation ``cv``. ``uniform``: on
    [``min``, ``max``] when both are given, else ``mean`` ± ``mean·cv·√3``.
    Every sample is clipped to [``min``, ``max``] (``min`` defaults to 0).
    """

    dist: Literal["fixed", "exponential", "lognormal", "uniform"] = "fixed"
    mean: float = Field(default=0.0, ge=0.0, le=86_400.0, allow_inf_nan=False)
    cv: float = Field(default=0.0, ge=0.0, le=10.0, allow_inf_nan=False)
    min: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    max: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _bounds(self) -> Dist:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is larger than max ({self.max})")
        return self


def _d(dist: str, mean: float, cv: float = 0.0) -> Dist:
    return Dist.model_validate({"dist": dist, "mean": mean, "cv": cv})


class LinkConfig(_Strict):
    """A tier's staging link (off while ``bandwidth_bps`` is null): a transfer of ``n``
    files and ``b`` bytes holds one of ``streams`` streams for ``n·per_file_s + b /
    bandwidth_bps`` seconds; transfers beyond ``streams`` wait in FIFO order."""

    bandwidth_bps: float | None = Field(default=None, gt=0.0, le=1e13, allow_inf_nan=False)
    per_file_s: float = Field(default=0.0, ge=0.0, le=3600.0, allow_inf_nan=False)
    streams: int = Field(default=1, ge=1, le=10_000)

    @property
    def enabled(self) -> bool:
        return self.bandwidth_bps is not None


class CEConfig(_Strict):
    """The computing element: job intake (T2), preparation, hand-off to the bridge (T3).
    ``stage_in``: the job's input upload, after preparation and before T3."""

    concurrency: int = Field(default=4, ge=1, le=1024)
    queue_limit: int = Field(default=2000, ge=1, le=10_000_000)
    service: Dist = Field(default_factory=lambda: _d("lognormal", 0.05, 0.5))
    input_grid_name: str = Field(default="gLite/reference", max_length=200)
    stage_in: LinkConfig = Field(default_factory=LinkConfig)


class BridgeConfig(_Strict):
    """The bridge: entry (T4) after the CE->bridge hop, preparation, submission to DG (T5).
    ``stage_out``: the job's output download, after it ran and before T6."""

    concurrency: int = Field(default=4, ge=1, le=1024)
    queue_limit: int = Field(default=100_000, ge=1, le=10_000_000)
    service: Dist = Field(default_factory=lambda: _d("lognormal", 0.05, 0.5))
    transfer: Dist = Field(default_factory=lambda: _d("lognormal", 0.02, 0.5))
    url: str = Field(default="http://bridge.reference:9091", max_length=200)
    stage_out: LinkConfig = Field(default_factory=LinkConfig)
    dispatch_s: float = Field(
        default=0.0,
        ge=0.0,
        le=3600.0,
        allow_inf_nan=False,
        description="0: each job is submitted to the worker pool (T5) when prepared; else "
        "the bridge submits the prepared jobs together at passes every dispatch_s seconds "
        "(a scheduler's cycle, as Maui's 3.5 min in the seed)",
    )


class WorkersConfig(_Strict):
    """The worker pool (the desktop grid): ``slots`` jobs run at once."""

    slots: int = Field(default=64, ge=1, le=1_000_000)
    runtime: Dist = Field(default_factory=lambda: _d("lognormal", 1.0, 0.3))
    grid_name: str = Field(default="BOINC/reference", max_length=200)


class StatusUpdateConfig(_Strict):
    """How the CE learns that the bridge finished a job (T6 -> T7).

    ``sequential``: CREAM's UpdateManager: one status call per job in the CE's list,
    each costing ``per_job_cost_s``, then a pause of ``interval_s``.
    ``batched``: every ``interval_s`` one call costing ``per_job_cost_s`` returns all.
    """

    policy: Literal["sequential", "batched"] = "sequential"
    per_job_cost_s: float = Field(default=0.35, ge=0.0, le=3600.0, allow_inf_nan=False)
    interval_s: float = Field(default=0.5, gt=0.0, le=3600.0, allow_inf_nan=False)


class FaultsConfig(_Strict):
    """Injected faults.

    ``on_full``: what a submission meets when the CE queue is full: ``reject`` answers
    503 at once; ``timeout`` holds the request up to ``hold_s`` waiting for room, then 503.
    """

    on_full: Literal["reject", "timeout"] = "reject"
    hold_s: float = Field(default=30.0, ge=0.0, le=3600.0, allow_inf_nan=False)
    job_failure_prob: float = Field(default=0.0, ge=0.0, le=1.0)
    submit_failure_prob: float = Field(default=0.0, ge=0.0, le=1.0)


class ReportsConfig(_Strict):
    """EDGI XML monitoring reports of the CE and the bridge.

    ``dir`` null: a temporary directory, removed when the grid stops.
    ``dt_precision`` ``ms`` appends ``.mmm`` to ``<dt>`` (an extension of the EDGI
    format; ``s`` is the seed's format exactly). ``bridge_ids``: the id the bridge's
    records name a job by: ``own`` (the bridge id the CE's job_submission handed on),
    ``upstream`` (the CE's id, as some components report), ``mixed`` (the CE's for the
    jobs whose bridge id ends in an odd digit).
    """

    dir: Path | None = None
    rotate_s: float = Field(default=5.0, gt=0.0, le=86_400.0, allow_inf_nan=False)
    publication_delay_s: float = Field(default=1.0, ge=0.0, le=86_400.0, allow_inf_nan=False)
    dt_precision: Literal["s", "ms"] = "ms"
    log_running: bool = True
    bridge_ids: Literal["own", "upstream", "mixed"] = "own"


class GridConfig(_Strict):
    """The whole reference grid."""

    ce: CEConfig = Field(default_factory=CEConfig)
    bridge: BridgeConfig = Field(default_factory=BridgeConfig)
    workers: WorkersConfig = Field(default_factory=WorkersConfig)
    status_update: StatusUpdateConfig = Field(default_factory=StatusUpdateConfig)
    faults: FaultsConfig = Field(default_factory=FaultsConfig)
    reports: ReportsConfig = Field(default_factory=ReportsConfig)
    seed: int = Field(default=1, ge=0, le=2**63 - 1)

    @property
    def stages_data(self) -> bool:
        """True when a tier stages (its stamps are served at ``GET /stamps``)."""
        return self.ce.stage_in.enabled or self.bridge.stage_out.enabled


def _where(loc: tuple[int | str, ...], source: str) -> str:
    field = ".".join(str(p) for p in loc) or "(top level)"
    return f"{source}: {field}"


def config_from_dict(
    data: Mapping[str, Any] | None, *, source: str = "config", spec_field: str | None = None
) -> GridConfig:
    """Validate a mapping into a :class:`GridConfig`; raise :class:`SpecError` naming the
    field: under ``spec_field`` (``backend.options.grid``) when an experiment spec gave
    the values, else in ``source`` (a file, a preset)."""
    try:
        return GridConfig.model_validate(dict(data or {}))
    except ValidationError as exc:
        err = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        loc = tuple(err["loc"])
        where = ".".join([spec_field, *map(str, loc)]) if spec_field else _where(loc, source)
        raise SpecError(
            f"{err['msg']}{more}",
            where=where,
            fix="see docs/reference-grid.md for the grid's fields"
            if spec_field
            else "see `gridbench reference serve --help` and docs for the reference grid fields",
        ) from None


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML (or JSON) file into a plain mapping, without validating it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(
            f"cannot read the grid configuration: {exc.strerror}",
            where=str(p),
            fix="give the path of an existing YAML file",
        ) from None
    return parse_mapping(text, str(p), what="the grid configuration", fix="use `key: value` lines")


def load_config(path: str | Path) -> GridConfig:
    """Load and validate a YAML (or JSON) file into a :class:`GridConfig`."""
    return config_from_dict(read_config_file(path), source=str(path))


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge two plain mappings (``override`` wins; nested mappings merge)."""
    out: dict[str, Any] = dict(base)
    for key, value in override.items():
        old = out.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def finishing_capacity_per_s(config: GridConfig) -> float:
    """Rough capacity of the CE finishing stage (jobs/s); ``inf`` when it is not the limit."""
    su = config.status_update
    if su.policy == "sequential" and su.per_job_cost_s > 0:
        return 1.0 / su.per_job_cost_s
    return math.inf
