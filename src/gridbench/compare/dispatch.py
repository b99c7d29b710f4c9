"""Compare and history of any family's runs: dispatch on the kind recorded in each run.

All job flow: the job-flow engine (:mod:`gridbench.compare.loading`,
:mod:`gridbench.compare.history`), unchanged. All of one other family that is
:class:`~gridbench.family.Comparable`: the figure comparison
(:mod:`gridbench.compare.figures`). A family that is not comparable, or runs of different
families: one ResultsError with where and fix. The CLI and the dashboard both come here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gridbench.compare.engine import GIVE_IDS, at_least_two, given_once
from gridbench.compare.figures import FigureRun, compare_figures, figure_history
from gridbench.compare.model import Comparison, ExperimentMetrics, History, Settings
from gridbench.errors import GridbenchError, ResultsError
from gridbench.family import DEFAULT_KIND, Comparable, Family, family, kind_of, not_applicable
from gridbench.store.catalogue import list_runs, resolve_run
from gridbench.store.layout import RunDir, read_json


def _run(root: Path, ref: str) -> RunDir:
    try:
        return resolve_run(ref, root)
    except ResultsError:
        raise ResultsError(
            f"no experiment {ref!r}",
            where=str(root),
            fix="give an id from 'gridbench list' (or a unique prefix, a path, or 'latest')",
        ) from None


def family_of_runs(root: Path, refs: Sequence[str], command: str) -> tuple[Family, list[RunDir]]:
    """The one family of the runs ``refs``; ResultsError when they are of several."""
    runs = [_run(root, r) for r in refs]
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


def _comparable(fam: Family, command: str) -> Comparable:
    if not isinstance(fam, Comparable):
        raise not_applicable(fam, command, "its family gives no comparable figures")
    return fam


def load_figure_run(fam: Comparable, run: RunDir) -> FigureRun:
    """An analysed run of a comparable family and its figures (ResultsError when it is not
    analysed or its metrics.json is not its family's)."""
    if not run.metrics_file.is_file():
        raise ResultsError(
            "the experiment has not been analysed (no metrics.json)",
            where=str(run.path),
            fix=f"run 'gridbench analyze {run.path.name}' first",
        )
    metrics = read_json(run.metrics_file)
    schema = getattr(fam, "schema", None)
    if not isinstance(metrics, dict) or metrics.get("schema") != schema:
        raise ResultsError(
            f"metrics.json is not a {schema} document",
            where=str(run.metrics_file),
            fix=f"re-analyse it: gridbench analyze {run.path.name}",
        )
    record = run.read_experiment()
    exp = ExperimentMetrics(id=run.path.name, metrics=metrics, record=record)
    return FigureRun.of(exp, fam.figures(run, metrics))


def compare_runs(
    root: Path,
    refs: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    samples: bool = True,
    settings: Settings | None = None,
) -> Comparison:
    """Compare two or more runs of one family (the first is the baseline): job flow by its
    engine, any other comparable family by its figures."""
    at_least_two(refs, GIVE_IDS)
    fam, runs = family_of_runs(root, refs, "compare")
    if fam.name == DEFAULT_KIND:
        from gridbench.compare.loading import load_comparison

        return load_comparison(root, refs, metrics=metrics, samples=samples, settings=settings)
    comparable = _comparable(fam, "compare")
    given_once(refs, [r.path.name for r in runs])
    loaded = [load_figure_run(comparable, r) for r in runs]
    return compare_figures(loaded, metrics=metrics, settings=settings)


def history_of(root: Path, ref: str, metric: str, *, settings: Settings | None = None) -> History:
    """``metric`` (a job-flow metric path, or a figure key) across every analysed run of
    the same family with the same spec name as ``ref``, oldest first."""
    fam, [run] = family_of_runs(root, [ref], "history")
    if fam.name == DEFAULT_KIND:
        from gridbench.compare.history import history

        return history(root, ref, metric, settings=settings)
    comparable = _comparable(fam, "history")
    reference = load_figure_run(comparable, run)
    runs: list[FigureRun] = []
    skipped: dict[str, str] = {}
    for entry in list_runs(root):
        if str(entry.get("name")) != reference.experiment.name:
            continue
        other = RunDir(Path(str(entry["path"])))
        if kind_of(entry) != fam.name:
            skipped[other.path.name] = f"a {kind_of(entry)} run"
            continue
        try:
            runs.append(load_figure_run(comparable, other))
        except ResultsError as exc:
            skipped[other.path.name] = exc.message
    return figure_history(reference, runs, metric, settings, skipped)


def metric_choices(root: Path, ref: str) -> list[str]:
    """What ``history`` can follow for ``ref``: job-flow metric paths or figure keys
    (empty when the run cannot be read)."""
    try:
        fam, [run] = family_of_runs(root, [ref], "history")
        if fam.name == DEFAULT_KIND:
            from gridbench.compare.engine import default_metrics
            from gridbench.compare.loading import load_experiment

            return [m.metric for m in default_metrics([load_experiment(root, ref, samples=False)])]
        return [f.key for f in load_figure_run(_comparable(fam, "history"), run).figures]
    except GridbenchError:
        return []
