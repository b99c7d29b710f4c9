"""The incidents of a campaign (IEEE 829 test incident reports): each failed unit, crash,
stopped or killed run, validity flag, file of a run that cannot be read, trial excluded
by hand and regression, with its severity, evidence and the one command that reproduces
it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gridbench.campaign.folder import Attempt, CampaignDir, State
from gridbench.campaign.verdicts import Judged, quoted, said
from gridbench.errors import GridbenchError

#: the severities of incidents, gravest first
SEVERITIES = ("critical", "major", "minor")


@dataclass(frozen=True)
class Incident:
    """One test incident report (IEEE 829): what happened, how grave, the evidence and the
    one command that reproduces it."""

    id: str
    kind: str  # failed error timeout killed interrupted invalid excluded regression
    severity: str
    unit: str
    attempt: str
    summary: str
    evidence: tuple[str, ...]
    reproduce: str
    run: str | None
    at: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "unit": self.unit,
            "attempt": self.attempt,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "reproduce": self.reproduce,
            "run": self.run,
            "at": self.at,
            "note": self.note,
        }


SEVERITY = {
    "error": "critical",
    "failed": "major",
    "timeout": "major",
    "regression": "major",
    "killed": "minor",
    "interrupted": "minor",
    "invalid": "minor",
    "excluded": "minor",
    "damaged": "minor",
}


def log_tail(folder: CampaignDir, attempt: Attempt, lines: int = 6) -> list[str]:
    """The last lines the unit's command printed (its log in the campaign folder, its
    tail only; a log that cannot be read says why)."""
    try:
        text = folder.log_tail(attempt.name)
    except GridbenchError as exc:
        return [f"log: not read: {said(exc)}"]
    except OSError as exc:
        return [f"log: not read: {exc.strerror or exc}"]
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return [f"log: {line[:300]}" for line in kept[-lines:]]


@dataclass
class Incidents:
    """The incidents of a campaign, numbered in the order they happened."""

    items: list[Incident] = field(default_factory=list)

    def add(self, kind: str, attempt: Attempt | None, unit: str, summary: str, **kw: Any) -> None:
        self.items.append(
            Incident(
                id=f"IN-{len(self.items) + 1:03d}",
                kind=kind,
                severity=SEVERITY.get(kind, "minor"),
                unit=unit,
                attempt=attempt.name if attempt is not None else "",
                summary=summary,
                evidence=tuple(kw.get("evidence", ())),
                reproduce=str(kw.get("reproduce", "")),
                run=kw.get("run", attempt.run if attempt is not None else None),
                at=str(kw.get("at", (attempt.ended or attempt.started) if attempt else "")),
                note=str(kw.get("note", "")),
            )
        )

    def of(self, unit: str) -> list[Incident]:
        return [i for i in self.items if i.unit == unit]


def attempt_incidents(
    out: Incidents,
    folder: CampaignDir,
    state: State,
    attempt: Attempt,
    judged: Judged | None,
    reproduce: str,
) -> None:
    """The incidents one attempt gives: its outcome's, then its validity flags and its
    trials excluded by hand (a run that did not pass says those within its own)."""
    a = attempt
    rep = f"repetition {a.rep}" + (f", attempt {a.attempt}" if a.attempt > 1 else "")
    outcome = judged.outcome if judged is not None else (a.outcome or "")
    note = "superseded: run again when the campaign resumed" if a.superseded else ""
    final = state.final(a.unit, a.rep) is a
    if outcome == "killed":
        out.add(
            "killed",
            a,
            a.unit,
            f"{a.unit} ({rep}) was killed midway: the campaign's process ended during it; "
            "it was run again when the campaign resumed",
            evidence=[f"started {a.started}; no end recorded", *a.reasons]
            + (
                [f"its run folder {a.run} is left as it was (gridbench cleanup CAMPAIGN)"]
                if a.run
                else []
            ),
            reproduce=reproduce,
        )
        return
    if outcome == "interrupted":
        out.add(
            "interrupted",
            a,
            a.unit,
            f"{a.unit} ({rep}) was interrupted",
            evidence=list(judged.reasons if judged else a.reasons),
            reproduce=reproduce,
            note=note,
        )
        return
    if outcome in ("error", "timeout"):
        reasons = list(judged.reasons if judged else a.reasons)
        what = "stopped past its timeout" if outcome == "timeout" else "did not run to a verdict"
        out.add(
            outcome,
            a,
            a.unit,
            f"{a.unit} ({rep}) {what}: {reasons[0] if reasons else ''}",
            evidence=[*reasons[1:], *log_tail(folder, a)],
            reproduce=reproduce,
            note=note,
        )
        return
    if judged is None:
        return
    if outcome == "failed":
        out.add(
            "failed",
            a,
            a.unit,
            f"{a.unit} ({rep}) failed: "
            + "; ".join(judged.reasons[:3])
            + (f" (and {len(judged.reasons) - 3} more)" if len(judged.reasons) > 3 else ""),
            evidence=[*judged.reasons, *(f"validity: {x}" for x in judged.invalid)],
            reproduce=reproduce,
            note=note,
        )
    elif judged.invalid and final:
        out.add(
            "invalid",
            a,
            a.unit,
            f"{a.unit} ({rep}): its measurement is flagged invalid ({judged.verdict})",
            evidence=list(judged.invalid),
            reproduce=reproduce,
        )
    if final:
        for d in judged.damaged:
            out.add(
                "damaged",
                a,
                a.unit,
                f"{a.unit} ({rep}): a file of its run cannot be read",
                evidence=[d, f"its outcome ({judged.outcome}) is judged from its metrics"],
                reproduce=reproduce,
            )
        for e in judged.excluded:
            out.add(
                "excluded",
                a,
                a.unit,
                quoted(f"{a.unit} ({rep}): trial {e.trial} excluded by hand: {e.reason}"),
                evidence=[  # exclusions.jsonl is foreign input: its texts quoted short
                    quoted(f"excluded {e.at}" + (f" by {e.by}" if e.by else "")),
                    quoted(f"'gridbench include {a.run} {e.trial}' takes it back"),
                ],
                reproduce=reproduce,
                at=quoted(e.at),
            )
