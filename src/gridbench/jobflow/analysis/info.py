"""The trial facts analysis needs, read from a trial.json dict (tolerant of missing keys)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gridbench.errors import ResultsError
from gridbench.jobflow.events.chain import StageChain
from gridbench.jobflow.specbase.load import DEFAULT_MODEL
from gridbench.store.safe_open import INT64_MAX, INT64_MIN

DEFAULT_LATE_THRESHOLD_NS = 100_000_000  # 100 ms, as the spec's load.late_threshold default


def _opt_int(v: Any, key: str = "a field", *, low: int = INT64_MIN) -> int | None:
    """An integer field of trial.json (ns times, counts): int64 or None, else ValueError
    naming ``key`` (a string or 10^30 would fail later, inside the analysis); a count is
    at least ``low``."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not INT64_MIN <= v <= INT64_MAX:
        raise ValueError(f"{key} is {str(v)[:40]!r}, not a 64-bit integer")
    if v < low:
        raise ValueError(f"{key} is {v}, below {low}")
    return v


def _opt_float(v: Any, key: str = "a field") -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError(f"{key} is {str(v)[:40]!r}, not a finite number")
    return float(v)


@dataclass(frozen=True, slots=True)
class TrialInfo:
    """One trial's identity, plan and environment (the analysis view of trial.json)."""

    trial_id: str
    chain: StageChain
    point_index: int = 0
    trial_index: int = 0
    point: Mapping[str, Any] = field(default_factory=dict)
    load_model: str = DEFAULT_MODEL
    offered_rate_per_s: float | None = None
    planned_jobs: int | None = None
    started_ns: int | None = None
    submit_end_ns: int | None = None
    ended_ns: int | None = None
    status: str = "complete"
    cpu_count: int = 1
    late_threshold_ns: int = DEFAULT_LATE_THRESHOLD_NS
    background_queue: Mapping[str, int | None] = field(default_factory=dict)
    agents: Mapping[str, Any] = field(default_factory=dict)
    #: the controller's NTP state at the trial's start (run/host_clock.py), {} if absent
    clock_sync: Mapping[str, Any] = field(default_factory=dict)
    #: CPU seconds of the client programs a command-style backend spawned (None: none)
    client_cpu_s: float | None = None
    #: the events the trial counted into its log (None: the trial did not finish writing)
    events: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "trial.json") -> TrialInfo:
        """Build from a trial.json object; raise ResultsError when the chain is missing."""
        chain_d = d.get("chain")
        if not isinstance(chain_d, Mapping) or not chain_d.get("stages"):
            raise ResultsError(
                "trial has no stage chain",
                where=f"{where}: chain",
                fix="the runner writes the backend's StageChain.to_dict() into trial.json",
            )
        try:
            chain = StageChain.from_dict(chain_d)
            bq = d.get("background_queue") or {}
            return cls(
                trial_id=str(d.get("trial_id", "trial")),
                chain=chain,
                point_index=_opt_int(d.get("point_index", 0), "point_index", low=0) or 0,
                trial_index=_opt_int(d.get("trial_index", 0), "trial_index", low=0) or 0,
                point=dict(d.get("point") or {}),
                load_model=str(d.get("load_model", DEFAULT_MODEL)),
                offered_rate_per_s=_opt_float(d.get("offered_rate_per_s"), "offered_rate_per_s"),
                planned_jobs=_opt_int(d.get("planned_jobs"), "planned_jobs", low=0),
                started_ns=_opt_int(d.get("started_ns"), "started_ns"),
                submit_end_ns=_opt_int(d.get("submit_end_ns"), "submit_end_ns"),
                ended_ns=_opt_int(d.get("ended_ns"), "ended_ns"),
                status=str(d.get("status", "complete")),
                cpu_count=max(1, _opt_int(d.get("cpu_count"), "cpu_count") or 1),
                late_threshold_ns=_opt_int(d.get("late_threshold_ns"), "late_threshold_ns", low=0)
                or DEFAULT_LATE_THRESHOLD_NS,
                background_queue={
                    "start": _opt_int(bq.get("start"), "background_queue.start"),
                    "end": _opt_int(bq.get("end"), "background_queue.end"),
                },
                agents=dict(d.get("agents") or {}),
                clock_sync=dict(d.get("clock_sync") or {}),
                client_cpu_s=_opt_float(
                    (d.get("client_processes") or {}).get("cpu_s"), "client_processes.cpu_s"
                ),
                events=_opt_int(d.get("events"), "events", low=0),
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise ResultsError(
                f"trial.json has a value of the wrong type: {exc}",
                where=where,
                fix="restore trial.json (gridbench writes it at the trial's end), or correct "
                "the named field",
            ) from None
