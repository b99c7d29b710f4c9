"""A campaign against the previous one of its name: per unit, what changed significantly
(``gridbench compare``'s statistics: Welch and Mann-Whitney clustered by repetition,
Fisher's exact test, Benjamini-Hochberg; a change in the worse direction is a
regression, and a regression is an incident), and the trend over every campaign of the
name (each one's summary.json)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gridbench.campaign.folder import COMPLETE, SUMMARY_FILE, SUSPENDED, CampaignDir, named, replay
from gridbench.errors import GridbenchError
from gridbench.store.layout import read_json


@dataclass(frozen=True)
class Change:
    """One significant difference of one figure between the two campaigns' runs."""

    metric: str
    point: str
    before: float | None
    after: float | None
    relative: float | None
    p_adjusted: float | None
    test: str | None
    verdict: str  # improved | regressed | unchanged

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class UnitChanges:
    """One unit's repetition compared: its run now and then, and what changed."""

    unit: str
    rep: int
    before: str | None
    after: str | None
    changes: list[Change] = field(default_factory=list)
    note: str = ""

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == "regressed"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "rep": self.rep,
            "before": self.before,
            "after": self.after,
            "changes": [c.to_dict() for c in self.changes],
            "note": self.note,
        }


@dataclass
class Previous:
    """The comparison with the previous campaign of the same name."""

    campaign: str
    units: list[UnitChanges]

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "units": [u.to_dict() for u in self.units]}


def relative_text(x: float | None) -> str:
    """A relative change as a signed percentage ("–" when unknown)."""
    return "–" if x is None else f"{x * 100:+.1f}%"


def previous_of(folder: CampaignDir) -> CampaignDir | None:
    """The newest earlier campaign of the same name that finished (complete or
    suspended)."""
    try:
        name = folder.read_state().get("name")
    except GridbenchError:
        return None
    earlier = [c for c in named(folder.root, str(name)) if c.id < folder.id]
    for c in reversed(earlier):
        try:
            if c.read_state().get("status") in (COMPLETE, SUSPENDED):
                return c
        except GridbenchError:
            continue
    return None


def final_runs(folder: CampaignDir) -> dict[tuple[str, int], str]:
    """(unit, repetition) -> the run folder that counts for it (its last finished one)."""
    st = replay(folder.events())
    out: dict[tuple[str, int], str] = {}
    for a in st.attempts:
        f = st.final(a.unit, a.rep)
        if f is not None and f.run and f.done:
            out[(a.unit, a.rep)] = f.run
    return out


def compare_with_previous(
    folder: CampaignDir, alpha: float = 0.05, min_effect: float = 0.05
) -> Previous | None:
    """Each unit's repetitions run in both campaigns, compared run with run; None when
    there is no previous campaign."""
    prev = previous_of(folder)
    if prev is None:
        return None
    # here, not at the top: compare loads scipy.stats (about a second), which a first
    # campaign never needs
    from gridbench.compare import Settings, load_comparison

    now, then = final_runs(folder), final_runs(prev)
    settings = Settings(alpha=alpha, min_effect=min_effect)
    units: list[UnitChanges] = []
    for (unit, rep), run in now.items():
        before = then.get((unit, rep))
        uc = UnitChanges(unit, rep, before, run)
        units.append(uc)
        if before is None:
            uc.note = "not run in the previous campaign"
            continue
        try:
            cmp = load_comparison(folder.root, [before, run], settings=settings)
        except GridbenchError as exc:
            uc.note = f"not compared: {exc.message}"
            continue
        for point, metric, diff in cmp.significant():
            base = next((v.value for v in metric.values if v.experiment == diff.baseline), None)
            new = next((v.value for v in metric.values if v.experiment == diff.experiment), None)
            uc.changes.append(
                Change(
                    metric=metric.metric,
                    point=point.key,
                    before=base,
                    after=new,
                    relative=diff.relative,
                    p_adjusted=diff.p_adjusted,
                    test=diff.test,
                    verdict=diff.verdict,
                )
            )
        if not uc.changes:
            uc.note = "no significant change"
    units.sort(key=lambda u: (u.unit, u.rep))
    return Previous(prev.id, units)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def trend(folder: CampaignDir) -> list[dict[str, Any]]:
    """Every campaign of this name up to this one, oldest first: when, its state, how
    many units passed of how many, its incidents and regressions, each unit's verdict
    (from each campaign's summary.json; a campaign without one says so)."""
    try:
        name = folder.read_state().get("name")
    except GridbenchError:
        return []
    rows: list[dict[str, Any]] = []
    for c in named(folder.root, str(name)):
        if c.id > folder.id:
            continue
        try:
            s = read_json(c.docs / SUMMARY_FILE)
        except GridbenchError:
            s = None
        if not isinstance(s, Mapping):
            rows.append({"campaign": c.id, "status": "no summary (not reported yet)"})
            continue
        counts = s.get("counts")
        verdicts = s.get("verdicts")
        row: dict[str, Any] = {  # another campaign's file: each field of its type, or none
            "campaign": c.id,
            "status": _text(s.get("status")),
            "created": _text(s.get("created")),
            "passed": _count(counts.get("passed") if isinstance(counts, Mapping) else None),
            "units": _count(s.get("total")),
            "incidents": _count(s.get("incident_count")),
            "regressions": _count(s.get("regression_count")),
            "verdicts": {
                str(k): str(v)
                for k, v in (verdicts.items() if isinstance(verdicts, Mapping) else ())
                if isinstance(v, str)
            },
        }
        rows.append(row)
    return rows
