"""The pydantic models of the command backend's ``backend.options``: one per kind of
operation template (argv, stdin, time-out, ok codes, stream, and the patterns that read
its output), and :class:`CommandOptions`, the whole block. :mod:`.options` compiles them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

StateName = Literal["queued", "running", "done", "failed", "cancelled", "unknown"]
STRING_TEMPLATE_FIX = (
    "a template is an argv list, not a string (gridbench never runs a shell): write it as a "
    "YAML list with one item per argument, e.g. [sbatch, --parsable, '{command_line}']"
)


def _argv_items(v: Any) -> Any:
    if isinstance(v, str):
        raise ValueError(STRING_TEMPLATE_FIX)
    if isinstance(v, list):
        return [str(x) if isinstance(x, int | float) and not isinstance(x, bool) else x for x in v]
    return v


def _regex(cls: type[BaseModel], v: str | None) -> str | None:
    if v is not None:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"{v!r} is not a valid regular expression: {exc}") from None
    return v


class OpOptions(BaseModel):
    """One operation's template: ``argv`` plus how to run and read it."""

    model_config = ConfigDict(extra="forbid")
    argv: list[str]
    stdin: str | None = Field(default=None, description="text fed to the client's stdin")
    timeout_s: float | None = Field(default=None, gt=0)
    ok_codes: list[int] = Field(default_factory=lambda: [0])
    stream: Literal["stdout", "stderr", "both"] = "stdout"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        if isinstance(v, str):
            raise ValueError(STRING_TEMPLATE_FIX)
        if isinstance(v, list):
            return {"argv": v}
        return v

    @field_validator("argv", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        return _argv_items(v)


class SubmitOptions(OpOptions):
    pattern: str = Field(description="regex picking the job id (group 'id', else group 1)")
    check_regex = field_validator("pattern")(_regex)


class StatusOptions(OpOptions):
    pattern: str = Field(description="regex with groups id and state (state alone per job)")
    scope: Literal["line", "output"] = "line"
    ignore: str | None = None
    unknown_pattern: str | None = None
    id_key: str | None = None
    ids_join: str | None = None
    chunk: int = Field(default=500, ge=1)
    parallel: int = Field(default=8, ge=1)
    missing: StateName | None = None
    check_regex = field_validator("pattern", "ignore", "unknown_pattern", "id_key")(_regex)


class FinishedOptions(OpOptions):
    pattern: str = Field(description="regex with group state and/or exit_code")
    parallel: int = Field(default=8, ge=1)
    check_regex = field_validator("pattern")(_regex)


class CancelOptions(OpOptions):
    ids_join: str | None = None
    chunk: int = Field(default=500, ge=1)
    parallel: int = Field(default=8, ge=1)


class OutputOptions(OpOptions):
    argv: list[str] | None = None  # type: ignore[assignment]
    read: str | None = Field(default=None, description="file to return (a path template)")

    @model_validator(mode="after")
    def _something(self) -> OutputOptions:
        if self.argv is None and self.read is None:
            raise ValueError("give argv (a command printing the output), read (a file), or both")
        return self


class QueueOptions(OpOptions):
    pattern: str | None = Field(default=None, description="count lines matching; default all")
    check_regex = field_validator("pattern")(_regex)


class CommandOptions(BaseModel):
    """``backend.options`` of the command backend (docs/backends.md)."""

    model_config = ConfigDict(extra="forbid")
    preset: str | None = None
    vars: dict[str, str | list[str] | None] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None
    rdir: str | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    max_processes: int = Field(default=64, ge=1, le=4096)
    check_executables: bool = True
    init: OpOptions | None = None
    submit: SubmitOptions
    status: StatusOptions
    finished: FinishedOptions | None = None
    cancel: CancelOptions | None = None
    output: OutputOptions | None = None
    queue: QueueOptions | None = None
    upload: OpOptions | None = Field(
        default=None,
        description="copy a job's input from {upload_dir} to where the job reads it, before "
        "submit (timed stage)",
    )
    download: OpOptions | None = Field(
        default=None,
        description="fetch a finished job's output files into {download_dir} (timed stage)",
    )
    stamps: dict[str, Any] | None = Field(
        default=None, description="server stamp sources (docs/backends.md, Server stamps)"
    )
    states: dict[str, StateName] = Field(default_factory=dict)
    operations: dict[str, OpOptions] = Field(
        default_factory=dict, description="named operations the probe model can time"
    )

    @field_validator("vars", mode="before")
    @classmethod
    def _vars(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        out: dict[Any, Any] = {}
        for k, x in v.items():
            if isinstance(x, bool):
                out[k] = str(x).lower()
            elif isinstance(x, int | float):
                out[k] = str(x)
            elif isinstance(x, list):
                out[k] = _argv_items(x)
            else:
                out[k] = x
        return out

    @field_validator("states", mode="before")
    @classmethod
    def _state_keys(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {str(k) if isinstance(k, int) else k: x for k, x in v.items()}
        return v
