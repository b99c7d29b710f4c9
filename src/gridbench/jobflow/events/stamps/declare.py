"""The declaration of a chain's server stamp sources (``stamps:`` in a backend's options or
a preset): pure data, checked field by field here, a whole block validated against the
registered kinds by :func:`.kind.parse_plan`, read by :mod:`.readers`, joined by :mod:`.join`.

A *source* is one place a tier records per-job times; each kind is one module of
``kinds/`` registered in :mod:`.kind` (another kind is another module, registered the
same way). The built-ins:

- ``sqlite``: a read-only query over a database the middleware writes (ARC's
  ``accounting.db``); it selects ``cursor``, ``id``, ``stage``, ``time`` (and optionally
  ``local_id``) columns and takes the last cursor seen as ``:after``, so each sweep reads
  only new rows in one query;
- ``log``: lines of a log file, each ``lines`` entry a regular expression with the named
  groups ``time`` and ``id`` (and optionally ``local_id``) stamping one stage; the file is
  read from the offset reached last time;
- ``files``: one file per job (a glob), matched like a log, for ARC's control-directory
  job files or HTCondor's per-job event logs.

A source's ``key`` says how its ids meet the run's jobs: ``backend`` (its ``id`` is the
backend's job id, or what ``backend_pattern`` extracts from it), ``name`` (its ``id`` is
gridbench's job name, the templates' ``{name}``: for files a client names before the
backend gives the job an id, like an input uploaded before submit) or ``<tier>.local_id``
(its ``id`` is the local id another tier recorded: Slurm's job id is A-REX's ``LocalJobID``).
"""

from __future__ import annotations

import re
from typing import Literal

import polars as pl
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from gridbench.jobflow.events.tiers import TIER_RE

_PRECISIONS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
STAGE_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_LOCAL_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]{0,63})\.local_id$")


def _regex(v: str, groups: tuple[str, ...]) -> str:
    try:
        rx = re.compile(v, re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    try:  # the rows are matched by polars (Rust regex: no look-around, no backreferences)
        pl.Series([""], dtype=pl.String).str.extract_groups(v)
    except pl.exceptions.PolarsError as exc:
        raise ValueError(f"not supported by the matcher ({str(exc).splitlines()[0]})") from None
    missing = [g for g in groups if g not in rx.groupindex]
    if missing:
        raise ValueError(f"needs the named group(s) {', '.join(missing)}: (?P<{missing[0]}>...)")
    return v


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TimeFormat(_Base):
    """How a source writes times: ``epoch`` (seconds, fractions allowed), ``epoch_ms``,
    ``epoch_us``, ``epoch_ns``, or a strftime format (``%Y-%m-%d %H:%M:%S``,
    ``%Y-%m-%dT%H:%M:%S%.3f``) read in ``timezone`` unless it carries its own offset."""

    format: str = "epoch"
    timezone: str = "UTC"


class LineRule(_Base):
    """One log-line pattern and the stage it stamps; without a stage, a line that only
    tells the local id this tier gave the job (A-REX's ``localid=`` in ``job.<id>.local``)."""

    stage: str | None = None
    pattern: str

    @field_validator("stage")
    @classmethod
    def _stage(cls, v: str | None) -> str | None:
        if v is not None and not STAGE_RE.match(v):
            raise ValueError(f"{v!r} is not a stage name (lower case letters, digits, _)")
        return v

    @model_validator(mode="after")
    def _pattern(self) -> LineRule:
        _regex(self.pattern, ("time", "id") if self.stage else ("id", "local_id"))
        return self


class SourceBase(_Base):
    """What every kind of source declares; a kind's model (its module in ``kinds/``, in
    the registry of :mod:`.kind`) adds ``kind: Literal[<name>]``, where it reads
    (:attr:`location`) and the stages it stamps (:meth:`stage_names`)."""

    kind: str
    tier: str = Field(description="the component that stamps (the events' source)")
    precision: Literal["ns", "us", "ms", "s"] = "s"
    time: TimeFormat = Field(default_factory=TimeFormat)
    key: str = Field(default="backend", description="backend | name | <tier>.local_id")
    backend_pattern: str | None = Field(
        default=None, description="regex with group id: this tier's id inside the backend id"
    )

    @field_validator("tier")
    @classmethod
    def _tier(cls, v: str) -> str:
        if not TIER_RE.match(v):
            raise ValueError(f"{v!r} is not a tier name (letters, digits, _ . -)")
        return v

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if v not in ("backend", "name") and not _LOCAL_KEY.match(v):
            raise ValueError(f"{v!r}: give 'backend', 'name' or '<tier>.local_id'")
        return v

    @field_validator("backend_pattern")
    @classmethod
    def _bp(cls, v: str | None) -> str | None:
        return None if v is None else _regex(v, ("id",))

    @property
    def precision_ns(self) -> int:
        return _PRECISIONS[self.precision]

    @property
    def via(self) -> str | None:
        """The tier whose ``local_id`` this source's ids are (None: the backend's ids)."""
        m = _LOCAL_KEY.match(self.key)
        return m.group(1) if m else None

    @property
    def location(self) -> str:
        """Where the source is read (a path or a glob), before the variables are filled in."""
        raise NotImplementedError(f"stamp kind {self.kind!r} gives no location")

    def stage_names(self) -> list[str]:
        """The stages this source stamps, in its declaration's order."""
        raise NotImplementedError(f"stamp kind {self.kind!r} gives no stage names")


class LineSource(SourceBase):
    """A source read as lines, each matched by ``lines``' patterns (log, files)."""

    lines: list[LineRule] = Field(min_length=1)

    def stage_names(self) -> list[str]:
        return [r.stage for r in self.lines if r.stage]


class StampPlan(_Base):
    """Every server stamp source of a chain, and the chain's order of their stages."""

    #: each a registered kind's model (:func:`plan_model` validates them by ``kind``)
    sources: list[SourceBase] = Field(min_length=1)
    #: the stages in chain order (client ``submit`` first and ``client_done`` after are
    #: added); a stage a source stamps but this list leaves out is appended in source order
    order: list[str] = Field(default_factory=list)
    #: after the last job ended, how long to keep reading for the chain's last stage: a
    #: server may log a job's end after the client saw it (GRAM's fork polling, ~2 s)
    settle_s: float = Field(default=10.0, ge=0, le=600)

    def stages(self) -> list[tuple[str, str, int]]:
        """``(stage, tier, precision_ns)`` in chain order."""
        by: dict[str, tuple[str, int]] = {}
        for s in self.sources:
            for n in s.stage_names():
                by.setdefault(n, (s.tier, s.precision_ns))
        ordered = [n for n in self.order if n in by]
        ordered += [n for n in by if n not in ordered]
        return [(n, *by[n]) for n in ordered]
