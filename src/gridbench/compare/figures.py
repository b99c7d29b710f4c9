"""The generic comparison of any family's runs, through their figures (pure).

A family that is :class:`~gridbench.family.Comparable` gives, for each analysed run, its
:class:`~gridbench.family.Figure` s: one quantity each, with its repeated measurements.
Figures are matched across runs by ``key``; the first run is the baseline. Per figure and
run: the mean, its 95% confidence interval (Student t) and the range; per figure and
non-baseline run: Welch's t-test of the samples against the baseline's. The p-values of
every compared figure and run form one family for the Benjamini-Hochberg correction. A
difference is *significant* when the adjusted p < ``alpha`` and the relative change is at
least ``min_effect`` (the same :class:`~gridbench.compare.model.Settings` as the swept
comparison); its verdict follows the figure's ``higher_is_better`` ("changed" when it
has none).

The result is the swept comparison's model (:class:`~gridbench.compare.model.
Comparison` with one point, :data:`POINT`; :class:`~gridbench.compare.model.History`), so
the terminal, ``--json`` and the dashboard show it unchanged.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from gridbench.compare import significance as sig
from gridbench.compare.engine import (
    GIVE_IDS,
    at_least_two,
    judge,
    shared_keys,
    spec_notes,
    welch_diff,
)
from gridbench.compare.model import (
    F64,
    Comparison,
    Diff,
    ExperimentMetrics,
    History,
    HistoryEntry,
    MetricComparison,
    MetricInfo,
    PointComparison,
    Settings,
    Value,
)
from gridbench.errors import ResultsError
from gridbench.family import Figure

#: The one point of a figure comparison (figures are not swept).
POINT = "all"
CHANGED = "changed"
NOT_TESTED = "not tested (fewer than 2 samples on a side, or two different constant samples)"


@dataclass(frozen=True)
class FigureRun:
    """One analysed run as the figure comparison sees it: its identity and its figures."""

    experiment: ExperimentMetrics
    figures: tuple[Figure, ...]
    #: what was wrong with the family's figures (duplicate keys), said in the notes
    problems: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        return self.experiment.id

    def by_key(self) -> dict[str, Figure]:
        """The figures by key (the first of a repeated key)."""
        out: dict[str, Figure] = {}
        for f in self.figures:
            out.setdefault(f.key, f)
        return out

    @classmethod
    def of(cls, experiment: ExperimentMetrics, figures: Sequence[Figure]) -> FigureRun:
        """A run and the figures its family gave; a repeated key is noted, not fatal."""
        seen: set[str] = set()
        dup: set[str] = set()
        for f in figures:
            (dup if f.key in seen else seen).add(f.key)
        problems = (
            (f"{experiment.id} gives figure(s) {', '.join(sorted(dup))} more than once: the first "
             "of each was used",)
            if dup
            else ()
        )  # fmt: skip
        return cls(experiment, tuple(figures), problems)


def better_of(fig: Figure) -> str:
    """The compare model's direction word: 'higher', 'lower' or 'neither'."""
    if fig.higher_is_better is None:
        return "neither"
    return "higher" if fig.higher_is_better else "lower"


def samples_of(fig: Figure) -> F64:
    """The finite samples of a figure as floats."""
    a = np.asarray([float(x) for x in fig.samples], dtype=np.float64)
    return a[np.isfinite(a)]


def value_of(experiment: str, fig: Figure) -> Value:
    """Mean, 95% CI half-width (Student t; None below 2 samples), min, max and n."""
    a = samples_of(fig)
    n = int(a.size)
    if n == 0:
        return Value(experiment, None, None, None, None, 0)
    ci: float | None = None
    if n >= 2:
        ci = float(stats.t.ppf(0.975, n - 1) * float(a.std(ddof=1)) / math.sqrt(n))
    return Value(experiment, float(a.mean()), ci, float(a.min()), float(a.max()), n)


def verdict_of(
    p_adjusted: float | None,
    difference: float | None,
    ratio: float | None,
    fig: Figure,
    settings: Settings,
) -> tuple[bool, str]:
    """(significant, verdict): as the swept comparison, with 'changed' for a figure without a better
    direction."""
    better = better_of(fig)
    significant, verdict = judge(
        p_adjusted, difference, ratio, "higher" if better == "neither" else better, settings
    )
    if significant and better == "neither":
        return True, CHANGED
    return significant, verdict


def _effect(base: Value, other: Value) -> tuple[float | None, float | None]:
    if base.value is None or other.value is None:
        return None, None
    ratio = other.value / base.value if base.value != 0.0 else None
    return other.value - base.value, ratio


def _select(keys: list[str], patterns: Sequence[str] | None) -> list[str]:
    if not patterns:
        return keys
    chosen = [k for k in keys if any(fnmatch.fnmatchcase(k, p) for p in patterns)]
    if not chosen:
        raise ResultsError(
            f"no compared figure matches {', '.join(patterns)}",
            where="--metric",
            fix=f"figures in common: {', '.join(keys)}",
        )
    return chosen


@dataclass
class _Pending:
    figure: int
    experiment: str
    res: sig.TestResult
    difference: float | None
    ratio: float | None


def compare_figures(
    runs: Sequence[FigureRun],
    *,
    metrics: Sequence[str] | None = None,
    settings: Settings | None = None,
) -> Comparison:
    """Compare the figures of ``runs`` against the first's (pure; no file access).

    ``metrics``: glob patterns selecting figure keys. Figures of the baseline that no
    other run has, and figures of another run that the baseline lacks, are left out and
    listed in ``unmatched``; a figure some (not all) other runs have is compared over
    those, and a note says which runs lack it. Raises ResultsError for fewer than two runs
    or no figure in common.
    """
    s = settings or Settings()
    at_least_two(runs, GIVE_IDS)
    base = runs[0]
    by_run = [r.by_key() for r in runs]
    keys, unmatched = shared_keys(
        [r.id for r in runs],
        by_run,
        "figure",
        "compare runs of the same spec (or specs measuring the same figures)",
    )
    keys = _select(keys, metrics)
    notes: list[str] = [p for r in runs for p in r.problems]
    infos: list[MetricInfo] = []
    table: list[list[Value]] = []
    pending: list[_Pending] = []
    for fi, key in enumerate(keys):
        fig0 = by_run[0][key]
        infos.append(MetricInfo(key, fig0.label, fig0.unit, better_of(fig0), sig.WELCH))
        missing = [r.id for r, per in zip(runs, by_run, strict=True) if key not in per]
        if missing:
            notes.append(f"figure {key} is missing from {', '.join(missing)}: compared without")
        units = sorted({per[key].unit for per in by_run if key in per} - {fig0.unit})
        if units:
            notes.append(
                f"figure {key} is in {fig0.unit!r} in the baseline but in "
                f"{', '.join(repr(u) for u in units)} elsewhere: check the runs' versions"
            )
        a0 = samples_of(fig0)
        v0 = value_of(base.id, fig0)
        vals = [v0]
        for r, per in zip(runs[1:], by_run[1:], strict=True):
            if key not in per:
                continue
            v = value_of(r.id, per[key])
            vals.append(v)
            diff, ratio = _effect(v0, v)
            pending.append(_Pending(fi, r.id, sig.welch(a0, samples_of(per[key])), diff, ratio))
        table.append(vals)
    p_raw = np.array([np.nan if x.res is None else x.res[1] for x in pending], dtype=np.float64)
    p_adj = sig.benjamini_hochberg(p_raw)  # one family: every figure and experiment
    diffs: dict[int, list[Diff]] = {}
    for x, pa in zip(pending, p_adj, strict=True):
        padj = None if np.isnan(pa) else float(pa)
        judged = verdict_of(padj, x.difference, x.ratio, by_run[0][keys[x.figure]], s)
        diffs.setdefault(x.figure, []).append(
            welch_diff(
                x.experiment, base.id, x.res, padj, (x.difference, x.ratio), judged, NOT_TESTED
            )
        )
    point = PointComparison(
        key=POINT,
        point={},
        offered_rate_per_s=None,
        indices={r.id: 0 for r in runs},
        metrics=tuple(
            MetricComparison(key, tuple(table[fi]), tuple(diffs.get(fi, [])))
            for fi, key in enumerate(keys)
        ),
    )
    return Comparison(
        experiments=tuple(r.experiment for r in runs),
        metric_info=tuple(infos),
        points=(point,),
        settings=s,
        unmatched=unmatched,
        notes=tuple(notes + spec_notes([r.experiment for r in runs])),
    )


def figure_history(
    reference: FigureRun,
    runs: Sequence[FigureRun],
    key: str,
    settings: Settings | None = None,
    skipped: Mapping[str, str] | None = None,
) -> History:
    """Figure ``key`` across ``runs`` (sorted oldest first here), each run tested against
    the one before it (Welch on the samples; Benjamini-Hochberg over the history).

    Raises ResultsError when the reference run has no figure ``key`` (naming those it has).
    """
    s = settings or Settings()
    ref = reference.by_key().get(key)
    if ref is None:
        have = ", ".join(f.key for f in reference.figures) or "none"
        raise ResultsError(
            f"{reference.id} has no figure {key!r}",
            where="--metric",
            fix=f"give one of its figures: {have}",
        )
    ordered = sorted(runs, key=lambda r: (r.experiment.created or "", r.id))
    figs = [r.by_key().get(key) for r in ordered]
    tests: list[tuple[int, int, sig.TestResult, float | None, float | None]] = []
    values = [None if f is None else value_of(r.id, f) for r, f in zip(ordered, figs, strict=True)]
    last: int | None = None
    for i, (f, v) in enumerate(zip(figs, values, strict=True)):
        if f is None or v is None:
            continue
        if last is not None:
            prev_f, prev_v = figs[last], values[last]
            assert prev_f is not None and prev_v is not None
            diff, ratio = _effect(prev_v, v)
            tests.append((i, last, sig.welch(samples_of(prev_f), samples_of(f)), diff, ratio))
        last = i
    p_adj = sig.benjamini_hochberg(
        np.array([np.nan if t[2] is None else t[2][1] for t in tests], dtype=np.float64)
    )
    vs: dict[int, Diff] = {}
    for (i, prev, res, diff, ratio), pa in zip(tests, p_adj, strict=True):
        padj = None if np.isnan(pa) else float(pa)
        judged = verdict_of(padj, diff, ratio, ref, s)
        vs[i] = welch_diff(
            ordered[i].id, ordered[prev].id, res, padj, (diff, ratio), judged, NOT_TESTED
        )
    gone = dict(skipped or {})
    entries: list[HistoryEntry] = []
    for i, (r, v) in enumerate(zip(ordered, values, strict=True)):
        if v is None:
            gone.setdefault(r.id, f"has no figure {key}")
            continue
        e = r.experiment
        entries.append(
            HistoryEntry(
                experiment=r.id,
                created=e.created,
                spec_hash=e.spec_hash,
                same_config=e.spec_hash is not None
                and e.spec_hash == reference.experiment.spec_hash,
                valid=e.valid,
                values={POINT: v},
                vs_previous={POINT: vs[i]} if i in vs else {},
            )
        )
    return History(
        metric=key,
        name=reference.experiment.name,
        reference=reference.id,
        better=better_of(ref),
        points=(POINT,),
        entries=tuple(entries),
        settings=s,
        skipped=gone,
    )
