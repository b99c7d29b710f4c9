"""What a campaign's run has to do: every unit and repetition in order, each unit checked
and estimated by its family's own plan, and what the campaign records of each unit."""

from __future__ import annotations

from collections.abc import Mapping
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


#: the fields of a unit's record by the type they hold (campaign.json is foreign input)
_TEXT = (
    "key", "component", "id", "title", "family", "spec", "spec_path", "verb", "command",
    "run_name", "estimate_note",
)  # fmt: skip
_WORDS = ("sets", "args", "hosts", "after", "features")
#: the longest estimate believed (a year): past it, or not a number, there is none
MAX_ESTIMATE_S = 365 * 86400.0


def _seconds(value: Any) -> float | None:
    """A number of seconds up to :data:`MAX_ESTIMATE_S`, or None (compared before any
    conversion: an integer of 400 digits is no float; NaN fails the comparison)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= MAX_ESTIMATE_S else None


def read_unit_records(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The units' records of a campaign's state (``campaign.json``'s ``units``) as
    :func:`unit_record` writes them: a record or a field of another type is left out, an
    estimate that is no finite number of seconds up to a year is none."""
    found = state.get("units")
    if not isinstance(found, Mapping):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for key, rec in found.items():
        if not isinstance(key, str) or not isinstance(rec, Mapping):
            continue
        clean: dict[str, Any] = {k: rec[k] for k in _TEXT if isinstance(rec.get(k), str)}
        for k in _WORDS:
            if isinstance(rec.get(k), list):
                clean[k] = [str(x) for x in rec[k] if isinstance(x, str | int | float)]
        if type(rec.get("repetitions")) is int:
            clean["repetitions"] = rec["repetitions"]
        clean["estimate_s"] = _seconds(rec.get("estimate_s"))
        for k in ("require_valid", "thresholds", "timeout_s"):
            if k in rec:
                clean[k] = rec[k]
        out[key] = clean
    return out


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
