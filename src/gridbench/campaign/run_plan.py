"""What a campaign's run has to do: every unit and repetition in order, each unit checked
and estimated by its family's own plan, and what the campaign records of each unit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gridbench.campaign.model import ComponentSpec, Parsed, Unit
from gridbench.campaign.units import Estimate, plan_units, shown, validate_units


@dataclass
class Plan:
    """What the campaign's run has to do: every (unit, repetition), in order."""

    units: list[Unit]
    components: dict[str, ComponentSpec]
    estimates: dict[str, Estimate] = field(default_factory=dict)

    def items(self) -> list[tuple[Unit, int]]:
        return [(u, r) for u in self.units for r in range(1, u.spec.repetitions + 1)]

    def unit(self, key: str) -> Unit | None:
        return next((u for u in self.units if u.key == key), None)


def unit_record(u: Unit, est: Estimate | None, root: Path) -> dict[str, Any]:
    """What the campaign records of a unit, for its documents and pages."""
    return {
        "key": u.key,
        "component": u.component,
        "id": u.spec.id,
        "title": u.spec.title,
        "family": u.family,
        "spec": u.spec.spec,
        "spec_path": str(u.spec_path),
        "verb": u.spec.verb,
        "sets": list(u.sets),
        "args": list(u.spec.args),
        "command": shown(u, root=root),
        "run_name": u.run_name,
        "repetitions": u.spec.repetitions,
        "hosts": list(u.hosts),
        "after": list(u.spec.after),
        "features": list(u.spec.features),
        "require_valid": u.spec.pass_.valid,
        "thresholds": [t.model_dump(mode="json") for t in u.spec.pass_.thresholds],
        "timeout_s": u.spec.timeout,
        "estimate_s": est.seconds if est is not None else None,
        "estimate_note": est.note if est is not None else "",
    }


def check_units(parsed: Parsed, units: list[Unit]) -> tuple[dict[str, Estimate], list[str]]:
    """Each unit checked and estimated by its family's plan (at once); a unit whose plan
    fails is checked by its family's validate (a spec its family refuses is an error line
    naming the unit's line in the campaign file; a family without a plan just gives no
    estimate)."""
    estimates = plan_units(units)
    unplanned = [e.unit for e in estimates if e.plan is None]
    errors = validate_units(parsed, unplanned)
    return {e.unit.key: e for e in estimates}, errors


def plan_of(parsed: Parsed, units: list[Unit]) -> Plan:
    """What a campaign has to do, by component."""
    return Plan(units=units, components={c.id: c for c in parsed.spec.components})


def prepare(parsed: Parsed, units: list[Unit]) -> tuple[Plan, list[str]]:
    """Every unit checked and estimated (``campaign plan``)."""
    estimates, errors = check_units(parsed, units)
    plan = plan_of(parsed, units)
    plan.estimates.update(estimates)
    return plan, errors
