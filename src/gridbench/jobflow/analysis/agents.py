"""Per-agent load of a trial run by remote agents (issue 13): what each agent submitted, at
what rate, how many late or dropped, its process's CPU, and the submit latency from its host
(the path from each submit host differs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from gridbench.jobflow.events.model import STAGE_SUBMIT, STAGE_SUBMIT_ACK


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _count(v: Any) -> int | None:
    x = _num(v)
    return None if x is None else int(x)


def remote_agents(agents: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """trial.json's remote agents: in-process ones (listed with a zero offset) are the
    controller itself, whose load the rest of the metrics already give."""
    return {str(n): r for n, r in agents.items() if isinstance(r, Mapping) and "address" in r}


def agent_breakdown(events: pl.DataFrame, agents: Mapping[str, Any]) -> dict[str, Any]:
    """metrics.json's ``by_agent``: per remote agent of trial.json ``agents`` (none: empty)

    - ``submitted``: its submit stamps in the events;
    - ``rate_per_s``: those over its own schedule's span (its start to its last
      submission, trial.json ``submit_span_ns``), else over its submit stamps' span;
    - ``late`` and ``dropped``: the agent's own counts (trial.json);
    - ``cpu_s``: its process's CPU during the trial (the client's CPU on that host);
    - ``submit_p50_ms`` / ``submit_p95_ms``: submit → submit_ack, both stamps its own, so no
      clock offset enters.
    """
    agents = remote_agents(agents)
    if not agents:
        return {}
    mine = events.filter(
        pl.col("stage").is_in([STAGE_SUBMIT, STAGE_SUBMIT_ACK])
        & pl.col("agent").is_in(list(agents))
    )
    submits = mine.filter(pl.col("stage") == STAGE_SUBMIT)
    per = submits.group_by("agent").agg(
        n=pl.len(), span_ns=pl.col("t_ns").max() - pl.col("t_ns").min()
    )
    wide = mine.pivot(on="stage", index=["job", "agent"], values="t_ns", aggregate_function="first")
    if {STAGE_SUBMIT, STAGE_SUBMIT_ACK} <= set(wide.columns):
        lat = (
            wide.with_columns(ms=(pl.col(STAGE_SUBMIT_ACK) - pl.col(STAGE_SUBMIT)) / 1e6)
            .drop_nulls("ms")
            .group_by("agent")
            .agg(p50=pl.col("ms").quantile(0.5), p95=pl.col("ms").quantile(0.95))
        )
    else:
        lat = pl.DataFrame(schema={"agent": pl.String, "p50": pl.Float64, "p95": pl.Float64})
    counts = {r["agent"]: r for r in per.iter_rows(named=True)}
    lats = {r["agent"]: r for r in lat.iter_rows(named=True)}
    out: dict[str, Any] = {}
    for name, rec in sorted(agents.items()):
        r = rec if isinstance(rec, Mapping) else {}
        c = counts.get(name, {"n": 0, "span_ns": None})
        span = _num(r.get("submit_span_ns")) or _num(c["span_ns"])
        n = int(c["n"])
        out[str(name)] = {
            "host": str(r["host"]) if r.get("host") is not None else None,
            "submitted": n,
            "rate_per_s": n / (span / 1e9) if span and n > 1 else None,
            "late": _count(r.get("late")),
            "dropped": _count(r.get("dropped")),
            "cpu_s": _num(r.get("cpu_s")),
            "submit_p50_ms": lats.get(name, {}).get("p50"),
            "submit_p95_ms": lats.get(name, {}).get("p95"),
            "lost": str(r["lost"]) if r.get("lost") else None,
        }
    return out
