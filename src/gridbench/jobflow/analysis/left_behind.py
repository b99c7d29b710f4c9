"""What a run left behind (issue 22.7): agents lost during a trial (trial.json
``agents.<name>.lost``, written by the controller when an agent stopped answering) and
jobs recorded as lost (failed with kind ``lost``: never seen to end, never cancelled),
which ``gridbench cleanup`` cancels. Stored as metrics ``left_behind``; the headline says
it and the runner records the state ``needs cleanup``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.jobflow.analysis.info import TrialInfo
from gridbench.jobflow.events.model import FAIL_LOST


def agents_lost(infos: Sequence[TrialInfo]) -> list[dict[str, str]]:
    """Every agent a trial lost, with the error its controller recorded."""
    out = []
    for info in infos:
        for name, rec in sorted(info.agents.items()):
            if isinstance(rec, Mapping) and rec.get("lost"):
                out.append(
                    {"trial_id": info.trial_id, "agent": str(name), "error": str(rec["lost"])}
                )
    return out


def jobs_lost(points: Sequence[Mapping[str, Any]]) -> int:
    """Jobs every trial recorded as lost (its ``failures`` by kind)."""
    total = 0
    for p in points:
        for t in p.get("trials") or []:
            n = (t.get("failures") or {}).get(FAIL_LOST, 0)
            total += int(n) if isinstance(n, int | float) and not isinstance(n, bool) else 0
    return total


def left_behind(infos: Sequence[TrialInfo], points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics ``left_behind``: ``agents_lost`` (trial, agent, error) and ``jobs_lost``."""
    return {"agents_lost": agents_lost(infos), "jobs_lost": jobs_lost(points)}


def sentence(left: Any) -> tuple[str, str] | None:
    """The headline's words for what a run left behind (text, detail), or None."""
    if not isinstance(left, Mapping):
        return None
    lost = [a for a in left.get("agents_lost") or [] if isinstance(a, Mapping)]
    jobs = left.get("jobs_lost")
    jobs = jobs if isinstance(jobs, int) and not isinstance(jobs, bool) else 0
    if not lost and not jobs:
        return None
    parts = []
    if lost:
        names = sorted({str(a.get("agent")) for a in lost})
        parts.append(f"{len(names)} agent(s) lost ({', '.join(names)})")
    if jobs:
        parts.append(f"{jobs} job(s) left without an end")
    detail = "; ".join(f"{a.get('agent')} in {a.get('trial_id')}: {a.get('error')}" for a in lost)
    return (
        f"The run left work behind: {' and '.join(parts)}; run 'gridbench cleanup' on it",
        detail,
    )
