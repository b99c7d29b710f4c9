"""The campaign as its documents show it, read once from its folder: each unit with its
repetitions (each attempt that counts judged again from its run), the incidents, and the
comparison with the previous campaign."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gridbench.campaign.folder import COPY_FILE, Attempt, CampaignDir, State, replay
from gridbench.campaign.incidents import Incidents, attempt_incidents
from gridbench.campaign.model import ComponentSpec, Parsed, UnitSpec, parse_campaign, unit_key
from gridbench.campaign.previous import Previous, compare_with_previous, relative_text
from gridbench.campaign.run_plan import read_unit_records
from gridbench.campaign.verdicts import Judged, count, judge, unit_verdict
from gridbench.errors import GridbenchError
from gridbench.fmt import fmt_val


@dataclass
class RepView:
    rep: int
    final: Attempt | None
    judged: Judged | None

    @property
    def outcome(self) -> str:
        if self.judged is not None:
            return self.judged.outcome
        return (self.final.outcome or "running") if self.final is not None else "not run"


@dataclass
class UnitView:
    key: str
    component: ComponentSpec
    unit: UnitSpec
    record: dict[str, Any]
    reps: list[RepView]
    why_not_run: str = ""

    @property
    def verdict(self) -> str:
        return unit_verdict([r.outcome for r in self.reps])

    @property
    def title(self) -> str:
        return self.unit.title or self.key


@dataclass
class View:
    """Everything the documents say, read once from the campaign folder."""

    folder: CampaignDir
    doc: dict[str, Any]  # campaign.json
    parsed: Parsed
    state: State
    units: list[UnitView]
    incidents: Incidents
    previous: Previous | None
    judged: dict[str, Judged] = field(default_factory=dict)  # attempt name -> judged
    trend: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.parsed.spec.name

    def counts(self, units: Sequence[UnitView] | None = None) -> dict[str, int]:
        return count(u.verdict for u in (self.units if units is None else units))

    def of(self, comp: ComponentSpec) -> list[UnitView]:
        return [u for u in self.units if u.component.id == comp.id]


def _judge_attempt(root: Path, a: Attempt, require_valid: bool) -> Judged | None:
    """An attempt's outcome now: a run that ran to a verdict is judged again from its
    run (a trial excluded since counts); the others keep what the log says."""
    if a.outcome in ("passed", "failed") and a.run:
        return judge(root, a, require_valid=require_valid)
    if a.outcome is None:
        return None
    return Judged(a.outcome, a.reasons)


def load_view(folder: CampaignDir, *, compare: bool = True) -> View:
    """The campaign as its documents show it."""
    doc = folder.read_state()
    base = Path(str(doc.get("base") or folder.path))
    parsed = parse_campaign(folder.copy_text(), str(folder.path / COPY_FILE), base)
    state = replay(folder.events())
    records = read_unit_records(doc)
    judged: dict[str, Judged] = {}
    valid_of = {unit_key(c, u): u.pass_.valid for c, u in parsed.spec.units()}
    for a in state.attempts:
        j = _judge_attempt(folder.root, a, valid_of.get(a.unit, False))
        if j is not None:
            judged[a.name] = j
    units = []
    for comp, unit in parsed.spec.units():
        key = unit_key(comp, unit)
        reps = []
        for r in range(1, unit.repetitions + 1):
            final = state.final(key, r)
            reps.append(RepView(r, final, judged.get(final.name) if final else None))
        why = ""
        sus = state.suspended.get("*") or state.suspended.get(comp.id)
        blocked = [by for (u, _), by in state.blocked.items() if u == key]
        if sus and any(r.final is None for r in reps):
            why = f"suspended: {sus} did not pass (suspension criteria)"
        elif blocked:
            why = f"not run: {blocked[0]} did not pass (after:)"
        units.append(UnitView(key, comp, unit, dict(records.get(key, {})), reps, why))
    incidents = Incidents()
    for a in state.attempts:
        rec = records.get(a.unit, {})
        attempt_incidents(
            incidents, folder, state, a, judged.get(a.name), str(rec.get("command", ""))
        )
    previous = None
    if compare:
        try:
            previous = compare_with_previous(folder, parsed.spec.alpha, parsed.spec.min_effect)
        except GridbenchError:
            previous = None
    if previous is not None:
        for uc in previous.units:
            for ch in uc.regressions:
                rec = records.get(uc.unit, {})
                incidents.add(
                    "regression",
                    None,
                    uc.unit,
                    f"{uc.unit} (repetition {uc.rep}) regressed against campaign "
                    f"{previous.campaign}: {ch.metric} at {ch.point} "
                    f"{fmt_val(ch.before)} → {fmt_val(ch.after)} ({relative_text(ch.relative)})",
                    evidence=[
                        f"{ch.test or 'test'}: adjusted p = {fmt_val(ch.p_adjusted)}",
                        f"before: run {uc.before}; now: run {uc.after}",
                        f"gridbench compare {uc.before} {uc.after}",
                    ],
                    reproduce=str(rec.get("command", "")),
                    run=uc.after,
                    at=str(doc.get("finished") or doc.get("updated") or ""),
                )
    return View(folder, doc, parsed, state, units, incidents, previous, judged)
