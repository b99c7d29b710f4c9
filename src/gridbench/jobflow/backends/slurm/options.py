"""``backend.options`` of the slurm backend, validated before anything runs."""

from __future__ import annotations

import re
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gridbench.jobflow.backends.slurm.rest import SlurmRestOptions


class SlurmOptions(BaseModel):
    """``backend.options`` of the slurm backend (docs/backends.md)."""

    model_config = ConfigDict(extra="forbid")
    conf: str | None = Field(default=None, description="slurm.conf (exported as SLURM_CONF)")
    env: dict[str, str] = Field(default_factory=dict, description="extra client environment")
    bin_dir: str | None = Field(default=None, description="where sbatch & co. are; else PATH")
    partition: str | None = None
    time_limit: str | None = Field(default=None, description="sbatch --time, e.g. 5 or 0:30")
    workdir: str | None = Field(default=None, description="sbatch --chdir")
    output: str = Field(default="/dev/null", description="sbatch --output; %j is the job id")
    sbatch_args: list[str] = Field(default_factory=list)
    script: str | None = Field(
        default=None, description="batch script to submit (job.command are its arguments)"
    )
    controller_log: str | None = Field(
        default="auto", description="slurmctld log for ms stamps: a path, auto, or null"
    )
    log_timezone: str | None = Field(default=None, description="IANA zone of the log stamps")
    use_sacct: bool = Field(default=False, description="resolve jobs squeue forgot via sacct")
    resolve_chunk: int = Field(default=500, ge=1, le=10_000, description="ids per sacct call")
    command_timeout_s: float = Field(default=30.0, gt=0)
    max_concurrent_submits: int = Field(default=16, ge=1, le=1024)
    submit_via: Literal["sbatch", "rest"] = Field(
        default="sbatch", description="submission path: the sbatch client or slurmrestd"
    )
    status_via: Literal["squeue", "rest"] = Field(
        default="squeue", description="status path: squeue or slurmrestd /jobs"
    )
    squeue_format: Literal["json", "text"] = Field(
        default="text",
        description="squeue -O with | separators (the default: about 16x less client CPU "
        "per sweep than --json), or squeue --json",
    )
    rest: SlurmRestOptions | None = Field(default=None, description="slurmrestd endpoint")
    reservation_args: list[str] = Field(
        default_factory=lambda: ["starttime=now", "duration=10", "nodes=ALL", "flags=ignore_jobs"],
        description="'scontrol create reservation' arguments besides its name (and users=, "
        "added as the submitting user unless given)",
    )
    token_args: list[str] = Field(
        default_factory=list, description="'scontrol token' arguments, e.g. [lifespan=60]"
    )

    @model_validator(mode="after")
    def _rest_needs_endpoint(self) -> SlurmOptions:
        uses_rest = "rest" in (self.submit_via, self.status_via)
        if uses_rest and self.rest is None:
            raise ValueError(
                "submit_via/status_via 'rest' needs the endpoint: "
                "rest: {url: http://HOST:PORT, token_env: SLURM_JWT}"
            )
        if self.submit_via == "rest" and self.sbatch_args:
            raise ValueError(
                "sbatch_args apply to sbatch only; with submit_via: rest leave them out"
            )
        return self

    @field_validator("time_limit")
    @classmethod
    def _limit(cls, v: str | None) -> str | None:
        if v is not None:
            minutes(v)
        return v

    @field_validator("log_timezone")
    @classmethod
    def _zone(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                ZoneInfo(v)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {v!r} (e.g. UTC, Europe/Paris)") from None
        return v


_TIME_LIMIT = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def minutes(limit: str) -> int:
    """sbatch's --time forms (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S) as whole minutes, ≥ 1."""
    m = _TIME_LIMIT.match(limit.strip())
    if m is None:
        raise ValueError(f"time limit {limit!r} is not M, M:S, H:M:S or D-H:M:S")
    days, a, b, c = (int(x) if x else 0 for x in m.groups())
    if m.group(1) is not None or m.group(4) is not None:  # D-H[:M[:S]] or H:M:S
        h, mins, secs = a, b, c
    else:  # M[:S]
        h, mins, secs = 0, a, b
    return max(days * 1440 + h * 60 + mins + (1 if secs else 0), 1)
