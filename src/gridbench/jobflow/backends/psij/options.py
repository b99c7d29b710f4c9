"""Options of the ``psij`` backend and the PSI/J executor configuration built from them.

PSI/J is imported only when a backend opens, so gridbench runs without the ``psij`` extra.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gridbench.errors import BackendError

FIX_INSTALL = "pip install 'gridbench[psij]' (the psij-python package)"
LOCAL_PRECISION_S = 0.1  # PSI/J's local executor reaps processes every 0.1 s at most


class PsijOptions(BaseModel):
    """``backend.options`` of the psij backend (docs/backends.md)."""

    model_config = ConfigDict(extra="forbid")
    executor: str = Field(default="local", description="PSI/J executor: local, slurm, pbs, ...")
    url: str | None = Field(default=None, description="executor URL (most ignore it)")
    queue: str | None = Field(default=None, description="queue / partition (queue_name)")
    account: str | None = None
    time_limit_s: float | None = Field(default=None, gt=0, description="job walltime")
    poll_interval_s: float = Field(default=1.0, ge=0.05, le=3600)
    work_directory: str | None = Field(default=None, description="PSI/J scripts and exit codes")
    keep_files: bool = False
    config: dict[str, Any] = Field(default_factory=dict, description="extra executor config")
    custom_attributes: dict[str, str] = Field(default_factory=dict)
    environment: dict[str, str] = Field(default_factory=dict)
    directory: str | None = Field(default=None, description="job working directory")
    launcher: str | None = None
    max_concurrent_submits: int = Field(default=16, ge=1, le=256)


def import_psij() -> Any:
    """The ``psij`` module, or a BackendError saying how to install it."""
    try:
        import psij
    except ImportError as exc:
        raise BackendError(
            f"PSI/J is not installed: {exc}", where="backend psij", fix=FIX_INSTALL
        ) from None
    return psij


def executor_class(psij: Any, name: str) -> type[Any]:
    """The PSI/J executor class registered under ``name``."""
    names = sorted(psij.JobExecutor.get_executor_names())
    if name not in names:
        raise BackendError(
            f"PSI/J has no executor {name!r}",
            where="backend.options.executor",
            fix=f"use one of: {', '.join(names)}",
        )
    from psij._plugins import _get_plugin_class

    try:
        entry = _get_plugin_class(name, None, "executor", psij.JobExecutor._executors)
    except ValueError as exc:
        cause = exc.__cause__ or exc
        raise BackendError(
            f"PSI/J executor {name!r} could not be loaded: {cause}",
            where="backend.options.executor",
            fix="install what that executor needs (e.g. flux's Python bindings)",
        ) from None
    if entry.ecls is None:
        raise BackendError(f"PSI/J executor {name!r} has no class", where="backend psij")
    return entry.ecls


def is_batch(psij: Any, cls: type[Any]) -> bool:
    """Whether ``cls`` is a batch-scheduler executor (polls the queue every interval)."""
    from psij.executors.batch.batch_scheduler_executor import BatchSchedulerExecutor

    return issubclass(cls, BatchSchedulerExecutor)


def config_class(psij: Any, cls: type[Any]) -> type[Any]:
    """The configuration class an executor's ``config`` parameter is typed with, else the
    generic batch or base class (a batch executor given a base config polls every 30 s)."""
    from psij.executors.batch.batch_scheduler_executor import BatchSchedulerExecutorConfig

    base: type[Any] = (
        BatchSchedulerExecutorConfig if is_batch(psij, cls) else psij.JobExecutorConfig
    )
    try:
        hint = typing.get_type_hints(cls.__init__).get("config")
    except Exception:  # an annotation that does not resolve: fall back
        hint = None
    found = [
        c for c in typing.get_args(hint) or (hint,) if isinstance(c, type) and issubclass(c, base)
    ]
    return found[0] if len(found) == 1 else base


def make_config(psij: Any, cls: type[Any], o: PsijOptions) -> Any:
    """The executor configuration: poll interval, work directory and ``config`` keys."""
    kwargs: dict[str, Any] = {}
    if o.work_directory:
        kwargs["work_directory"] = Path(o.work_directory)
    if is_batch(psij, cls):
        # PSI/J types these as int seconds, but only ever passes them to time.sleep()
        kwargs["queue_polling_interval"] = o.poll_interval_s
        kwargs["initial_queue_polling_delay"] = o.poll_interval_s
        kwargs["keep_files"] = o.keep_files
    kwargs.update(o.config)
    conf_cls = config_class(psij, cls)
    try:
        return conf_cls(**kwargs)
    except TypeError as exc:
        accepted = [p for p in inspect.signature(conf_cls.__init__).parameters if p != "self"]
        raise BackendError(
            f"{conf_cls.__name__} refused the configuration: {exc}",
            where="backend.options.config",
            fix=f"use keys {conf_cls.__name__} accepts: {', '.join(accepted)}",
        ) from None


def precision_s(psij: Any, cls: type[Any], o: PsijOptions) -> float:
    """How late a PSI/J status callback can be: the poll interval for batch executors."""
    return o.poll_interval_s if is_batch(psij, cls) else LOCAL_PRECISION_S
