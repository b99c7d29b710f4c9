"""Finding and loading the runs of a comparison, whatever their family.

A run is found as ``gridbench list`` shows it (id, unique prefix, path or ``latest``)
and loaded by its family: a :class:`~gridbench.swept.SweptComparable` one loads it
itself (job flow reads per-job samples from the events and caches the result); a
:class:`~gridbench.family.Comparable` one gives its figures from metrics.json.
"""

from __future__ import annotations

from pathlib import Path

from gridbench.compare.figures import FigureRun
from gridbench.compare.model import ExperimentMetrics, Settings
from gridbench.errors import ResultsError
from gridbench.family import Comparable, family_of, not_applicable
from gridbench.store.catalogue import resolve_run
from gridbench.store.layout import RunDir, read_json
from gridbench.swept import SweptComparable

DEFAULT_MAX_SAMPLES = Settings().max_samples


def find_run(root: Path, ref: str) -> RunDir:
    """The run ``ref`` names in ``root``; ResultsError naming the ref and the fix."""
    try:
        return resolve_run(ref, root)
    except ResultsError:
        raise ResultsError(
            f"no experiment {ref!r}",
            where=str(root),
            fix="give an id from 'gridbench list' (or a unique prefix, a path, or 'latest')",
        ) from None


def load_swept(
    fam: SweptComparable,
    run: RunDir,
    *,
    samples: bool = True,
    max_samples: int | None = DEFAULT_MAX_SAMPLES,
) -> ExperimentMetrics:
    """An analysed run of a swept-comparable family, loaded by it."""
    return fam.load_compared(run, samples=samples, max_samples=max_samples)


def load_experiment(
    root: Path, ref: str, *, samples: bool = True, max_samples: int | None = DEFAULT_MAX_SAMPLES
) -> ExperimentMetrics:
    """One analysed experiment (``ref``: id, unique id prefix, path or ``latest``) of a
    swept-comparable family (job flow).

    With ``samples`` the per-unit samples (job flow: per-job latencies from the trials'
    events) are read too, at most ``max_samples`` per point and sample key (``None``: no
    cap). Raises ResultsError for an unknown id, a run without metrics.json, or a torn
    one, and for a run of a family that is not swept-comparable.
    """
    run = find_run(root, ref)
    fam = family_of(run)
    if not isinstance(fam, SweptComparable):
        raise not_applicable(fam, "compare", "its family gives no swept figures")
    return load_swept(fam, run, samples=samples, max_samples=max_samples)


def load_figure_run(fam: Comparable, schema: str, run: RunDir) -> FigureRun:
    """An analysed run of a comparable family (whose metrics are ``schema``) and its
    figures (ResultsError when it is not analysed or its metrics.json is not its
    family's)."""
    if not run.metrics_file.is_file():
        raise ResultsError(
            "the experiment has not been analysed (no metrics.json)",
            where=str(run.path),
            fix=f"run 'gridbench analyze {run.path.name}' first",
        )
    metrics = read_json(run.metrics_file)
    if not isinstance(metrics, dict) or metrics.get("schema") != schema:
        raise ResultsError(
            f"metrics.json is not a {schema} document",
            where=str(run.metrics_file),
            fix=f"re-analyse it: gridbench analyze {run.path.name}",
        )
    record = run.read_experiment()
    exp = ExperimentMetrics(id=run.path.name, metrics=metrics, record=record)
    return FigureRun.of(exp, fam.figures(run, metrics))
