"""Which of a campaign's units may start now: what suspends or blocks a unit (an
``after:`` unit that did not pass), what it still waits for, and what it may not run
beside (a host in common, the same unit, the same run name)."""

from __future__ import annotations

from collections.abc import Iterable

from gridbench.campaign.folder import State
from gridbench.campaign.model import Unit
from gridbench.campaign.run_plan import Plan


def suspended_by(state: State, u: Unit) -> str | None:
    """The unit whose outcome suspended ``u``'s component (or the whole campaign), or None."""
    return state.suspended.get("*") or state.suspended.get(u.component)


def _dependencies(plan: Plan, u: Unit) -> list[Unit]:
    """The units ``u`` runs after (``after:``; a bare id is of its own component)."""
    refs = (ref if "." in ref else f"{u.component}.{ref}" for ref in u.spec.after)
    return [dep for ref in refs if (dep := plan.unit(ref)) is not None]


def blocker(plan: Plan, state: State, u: Unit) -> str | None:
    """An ``after:`` unit that finished without passing (or cannot run), or None."""
    for dep in _dependencies(plan, u):
        reps = range(1, dep.spec.repetitions + 1)
        finals = [state.final(dep.key, r) for r in reps]
        if all(f is not None and f.done for f in finals):
            if any(f is not None and f.outcome != "passed" for f in finals):
                return dep.key
        elif suspended_by(state, dep) is not None or any(
            (dep.key, r) in state.blocked for r in reps
        ):
            return dep.key
    return None


def waiting(plan: Plan, state: State, u: Unit) -> bool:
    """An ``after:`` unit not finished yet."""
    return any(
        not all(state.is_done(dep.key, r) for r in range(1, dep.spec.repetitions + 1))
        for dep in _dependencies(plan, u)
    )


def conflicts(running: Iterable[Unit], u: Unit) -> bool:
    """Whether ``u`` may not start beside the ``running`` units: a host in common, the same
    unit, or the same run name (its run folder is found by its name)."""
    return any(
        r.key == u.key or r.run_name == u.run_name or bool(set(r.hosts) & set(u.hosts))
        for r in running
    )
