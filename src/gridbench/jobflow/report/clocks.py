"""Agents: each agent's load (submissions, rate, late and dropped, client CPU, submit
latency from its host) and clock (estimated offset, its bound, drift, start skew and host
sync state), and the segments whose latencies went negative (issue 13)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.jobflow.report.build import Spec, TableDef, trial_cell
from gridbench.jobflow.report.model import Row, all_trials, as_dict, num, trial_head


def _ms(ns: Any) -> float | None:
    x = num(ns)
    return None if x is None else x / 1e6


def clock_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per trial and agent, for the trials where some agent's clock was corrected
    or carries a bound (a one-host run on the controller's clock has none)."""
    rows: list[Row] = []
    for p, t in all_trials(metrics):
        clocks = as_dict(t.get("clocks"))
        agents = as_dict(clocks.get("agents"))
        shown = any(
            (num(as_dict(a).get("offset_ns")) or 0) != 0
            or (num(as_dict(a).get("bound_ns")) or 0) > 0
            for a in agents.values()
        )
        if not shown:
            continue
        for name, a in agents.items():
            a = as_dict(a)
            rows.append(
                {
                    **trial_head(p, t),
                    "agent": str(name),
                    "host": a.get("host"),
                    "offset_ms": _ms(a.get("offset_ns")),
                    "bound_ms": _ms(a.get("bound_ns")),
                    "drift_ppm": num(a.get("drift_ppm")),
                    "start_skew_ms": _ms(a.get("start_skew_ns")),
                    "sync": str(a.get("sync") or "not recorded"),
                    "controller_sync": str(clocks.get("controller_sync") or "not recorded"),
                }
            )
    return rows


def _offset(r: Row) -> str:
    off, bound = r["offset_ms"], r["bound_ms"]
    if off is None:
        return "–"
    return f"{off:+.3f} ± {bound:.3f}" if bound is not None else f"{off:+.3f} ± ?"


_CLOCKS = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("agent", "agent"),
    Spec("host", lambda r: r["host"] or "–"),
    Spec("offset ms (± bound)", _offset),
    Spec("drift ppm", "drift_ppm", True),
    Spec("start skew ms", "start_skew_ms", True),
    Spec("agent sync", "sync"),
    Spec("controller sync", "controller_sync"),
)


#: Each agent's clock against the controller's, per trial (shown when any was corrected).
clocks_table = TableDef(
    "agents-clocks",
    "Agents and clocks",
    clock_rows,
    _CLOCKS,
    note="offset = agent clock − controller clock, estimated by a four-timestamp exchange "
    "(the minimum-delay probe of about 32); every agent stamp was moved to the controller's "
    "clock by subtracting it. ± is the estimate's bound (half the probe's round trip). Drift "
    "is the change of the offset between the estimates before and after the trial; start "
    "skew how late the agent started its schedule against the common start. Sync is the "
    "host's own NTP state (chronyc tracking).",
)


def negative_text(v: Mapping[str, Any]) -> str:
    """A trial's negative segments after clock correction, e.g. 'queued: 3 (+1 within ±)'."""
    parts = []
    for seg, d in as_dict(v.get("negative_segments")).items():
        d = as_dict(d)
        beyond = int(num(d.get("beyond_uncertainty")) or 0)
        within = int(num(d.get("within_uncertainty")) or 0)
        tail = f" (+{within} within ±)" if within else ""
        parts.append(f"{seg}: {beyond}{tail}")
    return "; ".join(parts)


def agent_load_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per trial and remote agent (metrics.json ``by_agent``), offset ± bound
    joined from the trial's clocks."""
    rows: list[Row] = []
    for p, t in all_trials(metrics):
        clocks = as_dict(as_dict(t.get("clocks")).get("agents"))
        for name, a in as_dict(t.get("by_agent")).items():
            a, c = as_dict(a), as_dict(clocks.get(name))
            rows.append(
                {
                    **trial_head(p, t),
                    "agent": str(name),
                    "host": a.get("host"),
                    "submitted": num(a.get("submitted")),
                    "rate_per_s": num(a.get("rate_per_s")),
                    "late": num(a.get("late")),
                    "dropped": num(a.get("dropped")),
                    "cpu_s": num(a.get("cpu_s")),
                    "submit_p50_ms": num(a.get("submit_p50_ms")),
                    "submit_p95_ms": num(a.get("submit_p95_ms")),
                    "offset_ms": _ms(c.get("offset_ns")),
                    "bound_ms": _ms(c.get("bound_ns")),
                    "lost": str(a.get("lost") or ""),
                }
            )
    return rows


_LOAD = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("agent", "agent"),
    Spec("host", lambda r: r["host"] or "–"),
    Spec("submitted", "submitted", True),
    Spec("rate /s", "rate_per_s", True),
    Spec("late", "late", True),
    Spec("dropped", "dropped", True),
    Spec("client CPU s", "cpu_s", True),
    Spec("submit p50 ms", "submit_p50_ms", True),
    Spec("submit p95 ms", "submit_p95_ms", True),
    Spec("offset ms (± bound)", _offset),
    Spec("lost", lambda r: r["lost"] or "–"),
)


#: What each remote agent did, per trial (remote agents only).
agents_load_table = TableDef(
    "agents-load",
    "Agents: load per agent and host",
    agent_load_rows,
    _LOAD,
    note="rate = the agent's submissions over its own schedule (its start to its last "
    "submission); late and dropped as the agent counted them; client CPU is the agent "
    "process's CPU during the trial; submit p50/p95 the submit call's latency from that "
    "host (both stamps on its clock). A lost agent's share is recorded lost.",
)
