"""Events on the controller's clock, and the uncertainty each stamp carries from its clock.

An agent stamps events on its own clock; the controller estimates the agent's offset
``θ = agent clock − controller clock`` and its bound ``±δ/2`` (gridbench.jobflow.run.clock_sync).
events.csv keeps the raw agent-clock ``t_ns`` and the offset applied (``clock_offset_ns``);
trial.json ``agents[name].clock_uncertainty_ns`` holds the bound. Analysis moves every stamp
to the controller's clock once, where a trial's events are loaded:

    t_controller = t_ns − clock_offset_ns

and attaches the bound of the agent that took it as the column ``clock_bound_ns`` (0 when
the agent is not listed or its bound is unknown). The result has ``clock_offset_ns`` 0, so
applying :func:`to_controller_time` again changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import polars as pl

from gridbench.store.safe_open import INT64_MAX, INT64_MIN

BOUND_COLUMN = "clock_bound_ns"
Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def agent_bounds(agents: Mapping[str, Any]) -> dict[str, int]:
    """``clock_uncertainty_ns`` per agent of trial.json ``agents`` (missing/unknown: 0)."""
    out: dict[str, int] = {}
    for name, rec in agents.items():
        v = rec.get("clock_uncertainty_ns") if isinstance(rec, Mapping) else None
        out[str(name)] = max(int(v), 0) if isinstance(v, int | float) else 0
    return out


def to_controller_time(events: Frame, agents: Mapping[str, Any]) -> Frame:
    """``events`` with ``t_ns`` on the controller's clock (``t_ns − clock_offset_ns``), the
    offset marked applied (0) and each stamp's clock bound in ``clock_bound_ns`` (pure;
    eager or lazy)."""
    bounds = agent_bounds(agents)
    columns = events.collect_schema().names()
    if "clock_offset_ns" in columns:
        offset = pl.col("clock_offset_ns").fill_null(0)
    else:
        offset = pl.lit(0, pl.Int64)
    if BOUND_COLUMN in columns:  # already moved: keep the bounds it carries
        bound = pl.col(BOUND_COLUMN).fill_null(0)
    elif bounds and "agent" in columns:
        bound = (
            pl.col("agent")
            .replace_strict(list(bounds), list(bounds.values()), default=0, return_dtype=pl.Int64)
            .fill_null(0)
        )
    else:
        bound = pl.lit(0, pl.Int64)
    return events.with_columns(
        _minus(pl.col("t_ns"), offset).alias("t_ns"),
        pl.lit(0, pl.Int64).alias("clock_offset_ns"),
        bound.cast(pl.Int64).alias(BOUND_COLUMN),
    )


def _minus(t: pl.Expr, offset: pl.Expr) -> pl.Expr:
    """``t - offset`` saturated at the int64 ends rather than wrapped (foreign stamps and
    offsets may be anything): a saturated stamp is then too far from the trial's origin to
    use, and counted (:func:`gridbench.jobflow.analysis.timelines.out_of_range`)."""
    return (
        pl.when((offset < 0) & (t > pl.lit(INT64_MAX, pl.Int64) + offset))
        .then(pl.lit(INT64_MAX, pl.Int64))
        .when((offset > 0) & (t < pl.lit(INT64_MIN, pl.Int64) + offset))
        .then(pl.lit(INT64_MIN, pl.Int64))
        .otherwise(t - offset)
    )


@dataclass(frozen=True, slots=True)
class StageClock:
    """The clocks that stamped one stage: the largest bound (ns), the agent it belongs to,
    and every agent that stamped the stage (sorted)."""

    bound_ns: int
    agent: str
    agents: tuple[str, ...]


def stage_clocks(events: pl.DataFrame, stages: tuple[str, ...]) -> dict[str, StageClock]:
    """Per stage stamped in ``events`` (moved by :func:`to_controller_time`): its clocks;
    empty when no stamp carries a bound (then every segment's bound is 0 anyway)."""
    if BOUND_COLUMN not in events.columns or events.height == 0:
        return {}
    if not (events[BOUND_COLUMN].max() or 0) > 0:  # type: ignore[operator]
        return {}  # one pass instead of a group-by: the common one-clock trial
    # one small row per (stage, agent): a few dozen rows whatever the number of events
    pairs = events.group_by("stage", "agent").agg(pl.col(BOUND_COLUMN).max().alias("b"))
    return clocks_from_pairs(pairs, stages)


def clocks_from_pairs(pairs: pl.DataFrame, stages: tuple[str, ...]) -> dict[str, StageClock]:
    """:func:`stage_clocks` from its (``stage``, ``agent``, ``b``: largest bound) rows."""
    rows = (
        pairs.filter(pl.col("stage").is_in(list(stages)))
        .sort("stage", "b", "agent", descending=[False, True, False])
        .rows()
    )
    by_stage: dict[str, list[tuple[str, int]]] = {}
    for stage, agent, b in rows:
        by_stage.setdefault(str(stage), []).append((str(agent), int(b or 0)))
    return {
        stage: StageClock(ags[0][1], ags[0][0], tuple(sorted(a for a, _ in ags)))
        for stage, ags in by_stage.items()
    }


def segment_bound(start: StageClock | None, end: StageClock | None) -> tuple[int, str]:
    """The clock bound (ns) of a segment between two stages, and the agents it comes from.

    Stamps of both stages taken by the same agents are on the same clocks: the offset
    cancels and the bound is 0 (an agent stamping its own jobs' submit and client_done).
    Otherwise the segment crosses clocks and the two stages' bounds add up."""
    if start is None or end is None or start.agents == end.agents:
        return 0, ""
    bound = start.bound_ns + end.bound_ns
    names = [c.agent for c in (start, end) if c.bound_ns > 0]
    return bound, ", ".join(dict.fromkeys(names))


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def sync_text(sync: Any) -> str:
    """A host's recorded sync state in one line (run/host_clock.py's record): 'synchronised,
    stratum 3, offset +12 µs', 'unavailable: <reason>' or 'not recorded'."""
    if not isinstance(sync, Mapping) or not sync:
        return "not recorded"
    if not sync.get("available"):
        return f"unavailable: {sync.get('reason', 'unknown')}"
    state = "synchronised" if sync.get("synchronised") else "not synchronised"
    off = _num(sync.get("system_time_s"))
    tail = f", offset {off * 1e6:+.0f} µs" if off is not None else ""
    return f"{state}, stratum {sync.get('stratum')}{tail}"


def clock_summary(agents: Mapping[str, Any], controller_sync: Any) -> dict[str, Any]:
    """The trial's ``clocks`` object of metrics.json: per agent its offset and bound (ns),
    drift (ppm), start skew (ns), host and sync state, and the controller's sync state."""
    out: dict[str, Any] = {}
    for name, rec in sorted(agents.items()):
        r = rec if isinstance(rec, Mapping) else {}
        off, bound = _num(r.get("clock_offset_ns")), _num(r.get("clock_uncertainty_ns"))
        skew = _num(r.get("start_skew_ns"))
        out[str(name)] = {
            "offset_ns": None if off is None else int(off),
            "bound_ns": None if bound is None else int(bound),
            "drift_ppm": _num(r.get("drift_ppm")),
            "start_skew_ns": None if skew is None else int(skew),
            "host": str(r["host"]) if r.get("host") is not None else None,
            "sync": sync_text(r.get("sync")),
        }
    return {"controller_sync": sync_text(controller_sync), "agents": out}
