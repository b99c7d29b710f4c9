"""Each unit's run against its pass criteria, through its family (``exit_code``,
``verdict``, the thresholds and validity its metrics record), and the incidents: each
failed unit, crash, stopped or killed run, validity flag, trial excluded by hand and
regression, with its severity, evidence and the one command that reproduces it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gridbench.campaign.folder import Attempt, CampaignDir, State, is_run_name
from gridbench.errors import EXIT_BACKEND, EXIT_INTERRUPTED, EXIT_OK, GridbenchError
from gridbench.family import family_of
from gridbench.store import exclusions
from gridbench.store.exclusions import Exclusion
from gridbench.store.layout import RunDir, read_json

#: the severities of incidents, gravest first
SEVERITIES = ("critical", "major", "minor")
#: exit codes a family's run command ends with when it ran and judged (ok, a threshold
#: or check failed, invalid with --fail-invalid)
JUDGED = frozenset({EXIT_OK, 1, 4})


@dataclass(frozen=True)
class Judged:
    """One repetition's run against the unit's pass criteria."""

    outcome: str  # passed failed error timeout interrupted killed
    reasons: tuple[str, ...] = ()
    failed_thresholds: tuple[str, ...] = ()
    thresholds: int = 0  # how many thresholds the run checked
    invalid: tuple[str, ...] = ()  # why its measurement is not to be trusted
    excluded: tuple[Exclusion, ...] = ()
    verdict: str = ""  # the family's verdict word(s)
    status: str = ""  # the run's recorded state


def _as_list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def threshold_lines(metrics: Mapping[str, Any]) -> tuple[int, list[str]]:
    """(how many thresholds, a line for each that failed) of a run's metrics."""
    rows = [t for t in _as_list(metrics.get("thresholds")) if isinstance(t, Mapping)]
    failed = []
    for t in rows:
        if t.get("passed"):
            continue
        where = f" at {t.get('where')}" if t.get("where") else ""
        why = t.get("reason") or f"actual {t.get('actual')}"
        failed.append(f"threshold {t.get('metric')} {t.get('op')} {t.get('value')}{where}: {why}")
    return len(rows), failed


def validity_lines(metrics: Mapping[str, Any]) -> list[str]:
    """Why a run's figures are not to be trusted, in its family's words (the reasons it
    lists, or its flags' details); [] when valid."""
    v = metrics.get("validity")
    if not isinstance(v, Mapping) or v.get("valid", True):
        return []
    lines = [str(r) for r in _as_list(v.get("reasons")) if isinstance(r, str)]
    for f in _as_list(v.get("flags")):
        if isinstance(f, Mapping):
            where = " ".join(str(f[k]) for k in ("target", "test", "environment") if f.get(k))
            text = str(f.get("detail") or f.get("rule") or "flagged")
            lines.append(f"{f.get('rule', 'flag')}{' (' + where + ')' if where else ''}: {text}")
    return lines or ["the run is flagged invalid"]


def judge(
    root: Path,
    attempt: Attempt,
    *,
    require_valid: bool,
    timed_out: bool = False,
    interrupted: bool = False,
) -> Judged:
    """The outcome of one attempt from its exit code and its run folder (read at the
    store's root, through its family)."""
    rc = attempt.exit
    if timed_out:
        return Judged("timeout", ("stopped: it ran past the unit's timeout",))
    if interrupted or rc == EXIT_INTERRUPTED:
        return Judged("interrupted", ("interrupted (Ctrl-C or a signal): results so far kept",))
    if rc is not None and rc < 0:
        return Judged("error", (f"the unit's process ended by signal {-rc}",))
    if attempt.run is None or not is_run_name(attempt.run):
        return Judged("error", (f"exit code {rc}: it made no run folder",))
    run = RunDir(root / attempt.run)
    try:
        exp = run.read_experiment()
        fam = family_of(run)
    except GridbenchError as exc:
        return Judged("error", (f"exit code {rc}: its run cannot be read: {exc.message}",))
    status = str(exp.get("status") or "")
    if not run.metrics_file.is_file():
        why = exp.get("error") or "it was not analysed"
        return Judged("error", (f"exit code {rc}: {why}",), status=status)
    try:
        metrics = read_json(run.metrics_file, kind="metrics")
        if not isinstance(metrics, dict):
            raise GridbenchError("metrics.json is not an object")
        code = fam.exit_code(metrics)
        verdict = fam.verdict(metrics)
    except GridbenchError as exc:
        return Judged("error", (f"its metrics cannot be read: {exc.message}",), status=status)
    total, failed = threshold_lines(metrics)
    invalid = validity_lines(metrics)
    excluded = tuple(exclusions.in_force(run).values())
    common = Judged(
        "",
        failed_thresholds=tuple(failed),
        thresholds=total,
        invalid=tuple(invalid),
        excluded=excluded,
        verdict=verdict,
        status=status,
    )
    if rc == EXIT_BACKEND or code == EXIT_BACKEND or status == "failed":
        why = str(exp.get("error") or metrics.get("error") or "the system under test failed")
        return dataclasses.replace(common, outcome="error", reasons=(f"the run failed: {why}",))
    if code == EXIT_INTERRUPTED or status == "aborted":
        return dataclasses.replace(
            common, outcome="interrupted", reasons=("the run was aborted: results so far kept",)
        )
    reasons = list(failed)
    if code != EXIT_OK and not failed:
        reasons.append(f"its family's verdict: {verdict}")
    if require_valid and invalid:
        reasons += [f"invalid (pass: valid: true): {x}" for x in invalid]
    if reasons:
        return dataclasses.replace(common, outcome="failed", reasons=tuple(reasons))
    if rc is not None and rc not in JUDGED:
        return dataclasses.replace(common, outcome="error", reasons=(f"exit code {rc}",))
    return dataclasses.replace(common, outcome="passed", reasons=())


# -- incidents ---------------------------------------------------------------------------


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
}


def log_tail(folder: CampaignDir, attempt: Attempt, lines: int = 6) -> list[str]:
    """The last lines the unit's command printed (its log in the campaign folder)."""
    try:
        text = folder.unit_log(attempt.name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
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
        for e in judged.excluded:
            out.add(
                "excluded",
                a,
                a.unit,
                f"{a.unit} ({rep}): trial {e.trial} excluded by hand: {e.reason}",
                evidence=[
                    f"excluded {e.at}" + (f" by {e.by}" if e.by else ""),
                    f"'gridbench include {a.run} {e.trial}' takes it back",
                ],
                reproduce=reproduce,
                at=e.at,
            )


def unit_verdict(outcomes: Sequence[str]) -> str:
    """A unit's verdict from its repetitions' final outcomes: passed when every one
    passed; else the gravest (error, timeout, failed), or "not run"."""
    if outcomes and all(o == "passed" for o in outcomes):
        return "passed"
    for word in ("error", "timeout", "failed"):
        if word in outcomes:
            return word
    return "not run"  # pending, suspended, blocked, or interrupted or killed unfinished


def count(verdicts: Iterable[str]) -> dict[str, int]:
    out = {"passed": 0, "failed": 0, "error": 0, "timeout": 0, "not run": 0}
    for v in verdicts:
        out[v] = out.get(v, 0) + 1
    return out
