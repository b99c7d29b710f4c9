"""Trials excluded by hand, with a reason: ``RUN/exclusions.jsonl``.

EDGI's report drops a trial by hand when it knows the trial measured something else (its
Fig. 19 against Fig. 20: a run with a broken bridge). gridbench records such a decision
beside the run, never in it: ``gridbench exclude RUN TRIAL --reason "..."`` appends one
line, ``gridbench include RUN TRIAL`` appends another that takes it back. No measured
file is ever rewritten; the analysis reads the lines in order and applies what they
leave (a family whose runs have such parts: :class:`Trialled`), and every report of the run lists
the exclusions in force with their reasons.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from gridbench.errors import ResultsError
from gridbench.store.layout import RunDir, now_iso
from gridbench.store.records import append_record, read_records

EXCLUSIONS_FILE = "exclusions.jsonl"
#: the longest reason kept (a sentence or two, as a report's footnote)
MAX_REASON = 2000


@runtime_checkable
class Trialled(Protocol):
    """A family whose runs are made of parts (job flow's trial folders) that can be excluded by
    hand."""

    def excludable_ids(self, run: RunDir) -> list[str]:
        """The ids of the run's excludable parts, in order (never raise: [] when
        unreadable)."""
        ...


@dataclass(frozen=True, slots=True)
class Exclusion:
    """A trial excluded by hand: which, why, when and by whom."""

    trial: str
    reason: str
    at: str
    by: str

    def to_dict(self) -> dict[str, str]:
        return {"trial": self.trial, "reason": self.reason, "at": self.at, "by": self.by}


def exclusions_file(run: RunDir | Path) -> Path:
    """Where a run's exclusions are recorded."""
    base = run.path if isinstance(run, RunDir) else Path(run)
    return base / EXCLUSIONS_FILE


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return ""


def record(run: RunDir, trial: str, *, excluded: bool, reason: str) -> dict[str, Any]:
    """Append one decision (exclude or include ``trial``) to the run; returns the line."""
    reason = reason.strip()
    if excluded and not reason:
        raise ResultsError(
            "an exclusion needs a reason",
            where="--reason",
            fix='say why the trial does not measure the system, e.g. --reason "the bridge '
            'was down during this trial"',
        )
    if len(reason) > MAX_REASON:
        raise ResultsError(
            f"the reason is longer than {MAX_REASON} characters",
            where="--reason",
            fix="say it in a sentence or two; the details belong in the run's notes",
        )
    line = {
        "action": "exclude" if excluded else "include",
        "trial": trial,
        "reason": reason,
        "at": now_iso(),
        "by": _user(),
    }
    append_record(exclusions_file(run), line)
    return line


def history(run: RunDir | Path) -> list[dict[str, Any]]:
    """Every decision recorded for the run, oldest first (a missing file holds none)."""
    return read_records(exclusions_file(run))


def in_force(run: RunDir | Path) -> dict[str, Exclusion]:
    """The exclusions the recorded decisions leave, by trial id, in the order made: each
    trial's last decision counts (an ``include`` after an ``exclude`` takes it back).
    Lines that are not decisions are ignored (the file is foreign input)."""
    found: dict[str, Exclusion] = {}
    for line in history(run):
        trial, action = line.get("trial"), line.get("action")
        if not isinstance(trial, str) or not trial:
            continue
        if action == "exclude":
            found.pop(trial, None)  # re-excluded: its latest reason, in its new place
            found[trial] = Exclusion(
                trial,
                _text(line.get("reason")),
                _text(line.get("at")),
                _text(line.get("by")),
            )
        elif action == "include":
            found.pop(trial, None)
    return found


def reasons(run: RunDir | Path) -> dict[str, str]:
    """Trial id -> the reason it is excluded, for the analysis."""
    return {t: e.reason for t, e in in_force(run).items()}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_records(found: Mapping[str, Exclusion]) -> list[dict[str, str]]:
    """The exclusions in force as plain records (metrics, JSON)."""
    return [e.to_dict() for e in found.values()]
