"""Each unit's run against its pass criteria, through its family (``exit_code``,
``verdict``, the thresholds and validity its metrics record; the run's files are foreign
input: what cannot be read is said, with its place and fix), and a unit's verdict from
its repetitions' (the incidents: :mod:`gridbench.campaign.incidents`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench.campaign.folder import Attempt
from gridbench.errors import EXIT_BACKEND, EXIT_INTERRUPTED, EXIT_OK, GridbenchError
from gridbench.family import family_of
from gridbench.store import exclusions
from gridbench.store.catalogue import is_run_name
from gridbench.store.exclusions import Exclusion
from gridbench.store.layout import RunDir, read_json

#: exit codes a family's run command ends with when it ran and judged (ok, a threshold
#: or check failed, invalid with --fail-invalid)
JUDGED = frozenset({EXIT_OK, 1, 4})
#: the longest text from a run's files (an error, a reason) a document quotes
MAX_QUOTE = 1000
#: what a family's verdict raises on a metrics.json of the wrong form (the campaign reads
#: a stored one: its family wrote it, but the store is foreign input)
MALFORMED = (AttributeError, TypeError, ValueError, KeyError, IndexError)


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
    #: files of the run that could not be read, though its outcome could (an incident)
    damaged: tuple[str, ...] = ()


def quoted(text: object) -> str:
    """Text from a run's files as a document quotes it: at most :data:`MAX_QUOTE`
    characters."""
    s = str(text)
    return s if len(s) <= MAX_QUOTE else s[:MAX_QUOTE] + f"… ({len(s) - MAX_QUOTE} more characters)"


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
        failed.append(
            quoted(f"threshold {t.get('metric')} {t.get('op')} {t.get('value')}{where}: {why}")
        )
    return len(rows), failed


def validity_lines(metrics: Mapping[str, Any]) -> list[str]:
    """Why a run's figures are not to be trusted, in its family's words (the reasons it
    lists, or its flags' details); [] when valid."""
    v = metrics.get("validity")
    if not isinstance(v, Mapping) or v.get("valid", True):
        return []
    lines = [quoted(r) for r in _as_list(v.get("reasons")) if isinstance(r, str)]
    for f in _as_list(v.get("flags")):
        if isinstance(f, Mapping):
            where = " ".join(str(f[k]) for k in ("target", "test", "environment") if f.get(k))
            text = str(f.get("detail") or f.get("rule") or "flagged")
            lines.append(
                quoted(f"{f.get('rule', 'flag')}{' (' + where + ')' if where else ''}: {text}")
            )
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
    if not os.path.lexists(run.path):
        return Judged(
            "error",
            (
                f"its run folder {run.path} is no longer in the store (deleted by hand?); "
                "restore it, or run the campaign again with --new",
            ),
        )
    try:
        exp = run.read_experiment()
        fam = family_of(run)
    except GridbenchError as exc:
        return Judged("error", (f"exit code {rc}: its run cannot be read: {said(exc)}",))
    status = str(exp.get("status") or "")
    if not run.metrics_file.is_file():
        why = quoted(exp.get("error") or "it was not analysed")
        return Judged("error", (f"exit code {rc}: {why}",), status=status)
    try:
        metrics = read_json(run.metrics_file, kind="metrics")
        if not isinstance(metrics, dict):
            raise GridbenchError("metrics.json is not an object", where=str(run.metrics_file))
        code = fam.exit_code(metrics)
        verdict = quoted(fam.verdict(metrics))
    except GridbenchError as exc:
        return Judged("error", (f"its metrics cannot be read: {said(exc)}",), status=status)
    except MALFORMED as exc:
        return Judged(
            "error",
            (
                f"its metrics cannot be read: {run.metrics_file} is not as its family writes "
                f"it ({type(exc).__name__}: {quoted(exc)}); analyse the run again "
                f"('gridbench analyze {run.id}', or its family's analyze)",
            ),
            status=status,
        )
    total, failed = threshold_lines(metrics)
    invalid = validity_lines(metrics)
    damaged: tuple[str, ...] = ()
    try:
        excluded = tuple(exclusions.in_force(run).values())
    except GridbenchError as exc:  # the outcome stands (metrics.json applied them)
        excluded, damaged = (), (f"its trials excluded by hand cannot be read: {said(exc)}",)
    common = Judged(
        "",
        failed_thresholds=tuple(failed),
        thresholds=total,
        invalid=tuple(invalid),
        excluded=excluded,
        verdict=verdict,
        status=status,
        damaged=damaged,
    )
    if rc == EXIT_BACKEND or code == EXIT_BACKEND or status == "failed":
        why = quoted(exp.get("error") or metrics.get("error") or "the system under test failed")
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


def said(exc: GridbenchError) -> str:
    """An error from reading a run, with its place and fix, as one line."""
    return quoted(
        exc.message + (f" ({exc.where})" if exc.where else "") + (f"; {exc.fix}" if exc.fix else "")
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
