"""Compare and history of any family's runs: dispatch on what the runs' family offers.

A :class:`~gridbench.swept.SweptComparable` family (job flow) goes through the swept
comparison (:mod:`gridbench.compare.engine`, :mod:`gridbench.compare.history`); a
:class:`~gridbench.family.Comparable` one through the figure comparison
(:mod:`gridbench.compare.figures`). A family that is neither, or runs of different
families: one ResultsError with where and fix. The CLI and the dashboard both come here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gridbench.compare.engine import GIVE_IDS, at_least_two, compare_points, given_once
from gridbench.compare.figures import FigureRun, compare_figures, figure_history
from gridbench.compare.history import build_history
from gridbench.compare.loading import (
    DEFAULT_MAX_SAMPLES,
    find_run,
    load_figure_run,
    load_swept,
)
from gridbench.compare.model import Comparison, ExperimentMetrics, History, Settings
from gridbench.compare.prediction import as_model_error
from gridbench.errors import GridbenchError, ResultsError
from gridbench.family import Comparable, Family, family, kind_of, not_applicable
from gridbench.store import exclusions
from gridbench.store.catalogue import list_runs
from gridbench.store.layout import RunDir
from gridbench.swept import SweptComparable


def family_of_runs(root: Path, refs: Sequence[str], command: str) -> tuple[Family, list[RunDir]]:
    """The one family of the runs ``refs``; ResultsError when they are of several."""
    runs = [find_run(root, r) for r in refs]
    kinds = [kind_of(r.read_experiment()) for r in runs]
    if len(set(kinds)) > 1:
        which = ", ".join(f"{r.path.name} is {k}" for r, k in zip(runs, kinds, strict=True))
        raise ResultsError(
            f"runs of different benchmark families cannot be compared ({which})",
            where="experiment ids",
            fix=f"give 'gridbench {command}' runs of one family (the kind column of "
            "'gridbench list')",
        )
    return family(kinds[0]), runs


def _comparable(fam: Family, command: str) -> SweptComparable | Comparable:
    if isinstance(fam, SweptComparable | Comparable):
        return fam
    raise not_applicable(fam, command, "its family gives no comparable figures")


def compare_runs(
    root: Path,
    refs: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    samples: bool = True,
    settings: Settings | None = None,
) -> Comparison:
    """Compare two or more runs of one family (the first is the baseline): point by point
    for a swept-comparable family, by its figures for a comparable one.

    ``metrics`` filters the compared metrics by glob pattern (e.g. ``latency.overall.*``);
    ``samples`` (swept) reads per-unit samples. Raises ResultsError (with where and fix)
    for fewer than two or repeated ids, unknown ids, unanalysed runs, torn metrics.json,
    and runs the family finds incompatible or with nothing in common.
    """
    at_least_two(refs, GIVE_IDS)
    fam, runs = family_of_runs(root, refs, "compare")
    comparable = _comparable(fam, "compare")
    if isinstance(comparable, SweptComparable):
        s = settings or Settings()
        loaded = [
            load_swept(comparable, r, samples=samples, max_samples=s.max_samples) for r in runs
        ]
        given_once(refs, [r.id for r in loaded])
        found = compare_points(comparable, loaded, metrics=metrics, settings=s)
    else:
        given_once(refs, [r.path.name for r in runs])
        figure_runs = [load_figure_run(comparable, fam.schema, r) for r in runs]
        found = compare_figures(figure_runs, metrics=metrics, settings=settings)
    found = as_model_error(found)  # a prediction against a measurement: the model's error
    said = exclusion_notes(runs)
    return dataclasses.replace(found, notes=(*found.notes, *said)) if said else found


def exclusion_notes(runs: Sequence[RunDir]) -> list[str]:
    """One note per trial excluded by hand in a compared run, with its reason: the
    comparison reads the run's figures without it (``gridbench exclude``)."""
    notes: list[str] = []
    for run in runs:
        try:
            found = exclusions.in_force(run)
        except ResultsError as exc:
            notes.append(f"{run.path.name}: its exclusions cannot be read ({exc.message})")
            continue
        notes += [
            f"{run.path.name}: trial {e.trial} excluded by hand ({e.reason}); its figures "
            "are compared without it"
            for e in found.values()
        ]
    return notes


def _same_name(root: Path, name: str, run: RunDir) -> list[dict[str, Any]]:
    """The catalogue entries of ``root``'s runs named ``name``, and ``run`` itself when
    it lies outside ``root`` (given by path): its history holds at least itself."""
    entries = [e for e in list_runs(root) if str(e.get("name")) == name]
    here = run.path.resolve()
    if all(Path(str(e["path"])).resolve() != here for e in entries):
        entries.append({**run.read_experiment(), "path": str(run.path)})
    return entries


def _swept_history(
    fam: SweptComparable, root: Path, run: RunDir, metric: str, settings: Settings | None
) -> History:
    reference = load_swept(fam, run, samples=False)
    runs: list[ExperimentMetrics] = []
    skipped: dict[str, str] = {}
    for entry in _same_name(root, reference.name, run):
        try:
            runs.append(load_swept(fam, find_run(root, str(entry["path"])), samples=False))
        except ResultsError as exc:
            skipped[str(entry.get("id"))] = exc.message
    return build_history(fam, reference, runs, metric, settings, skipped)


def history_of(root: Path, ref: str, metric: str, *, settings: Settings | None = None) -> History:
    """``metric`` (a swept family's metric path, e.g. job flow's ``latency.overall.p99``,
    or a figure key) across every analysed run with the same spec name as ``ref``, oldest
    first. Runs of that name that cannot be used are listed in ``skipped`` with the
    reason; ResultsError for an unknown or unanalysed ``ref`` and for a metric that names
    nothing in it."""
    fam, [run] = family_of_runs(root, [ref], "history")
    comparable = _comparable(fam, "history")
    if isinstance(comparable, SweptComparable):
        return _swept_history(comparable, root, run, metric, settings)
    reference = load_figure_run(comparable, fam.schema, run)
    runs: list[FigureRun] = []
    skipped: dict[str, str] = {}
    for entry in _same_name(root, reference.experiment.name, run):
        other = RunDir(Path(str(entry["path"])))
        if kind_of(entry) != fam.name:
            skipped[other.path.name] = f"a {kind_of(entry)} run"
            continue
        try:
            runs.append(load_figure_run(comparable, fam.schema, other))
        except ResultsError as exc:
            skipped[other.path.name] = exc.message
    return figure_history(reference, runs, metric, settings, skipped)


def metric_choices(root: Path, ref: str) -> list[str]:
    """What ``history`` can follow for ``ref``: a swept family's compared metrics or the
    figure keys (empty when the run cannot be read)."""
    try:
        fam, [run] = family_of_runs(root, [ref], "history")
        comparable = _comparable(fam, "history")
        if isinstance(comparable, SweptComparable):
            loaded = load_swept(comparable, run, samples=False, max_samples=DEFAULT_MAX_SAMPLES)
            return [f.key for f in comparable.swept_figures([loaded])]
        return [f.key for f in load_figure_run(comparable, fam.schema, run).figures]
    except GridbenchError:
        return []
