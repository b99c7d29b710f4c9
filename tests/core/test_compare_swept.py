"""The swept comparison (compare/engine.py, compare/history.py) is generic: a toy family
that is SweptComparable, with no job-flow metrics at all, is compared point by point
(clustered tests on its per-unit samples, Fisher on its counts, Welch over repetitions)
and followed across runs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from gridbench.compare import significance as sig
from gridbench.compare.engine import compare_points
from gridbench.compare.history import build_history
from gridbench.errors import ResultsError
from gridbench.family import Comparable, family
from gridbench.store.layout import RunDir
from gridbench.swept import (
    F64,
    ExperimentMetrics,
    Measure,
    SweepPoint,
    SweptComparable,
    SweptFigure,
    UnitSamples,
)


class Toy:
    """Runs whose metrics are ``{"points": {key: {"reps": [...], "units": [[...], ...],
    "bad": [failed, total]}}}``: one sweep, three figures."""

    key_figures = ("wait",)
    history_fix = "use wait or bad"

    def load_compared(
        self, run: RunDir, *, samples: bool, max_samples: int | None
    ) -> ExperimentMetrics:
        raise AssertionError("not read from files here")

    def check_compatible(self, runs: Sequence[ExperimentMetrics]) -> None:
        pass

    def swept_figures(self, runs: Sequence[ExperimentMetrics]) -> list[SweptFigure]:
        return [
            SweptFigure("wait", "waiting time", "s", False, "welch-t-clustered"),
            SweptFigure("bad", "bad units", "ratio", False, "fisher-exact"),
            SweptFigure("speed", "speed", "1/s", True, "welch-t"),
        ]

    def sweep_points(self, run: ExperimentMetrics) -> list[SweepPoint]:
        pts = run.metrics["points"]
        return [SweepPoint(k, {"size": k}, float(i), i, pts[k]) for i, k in enumerate(sorted(pts))]

    def measure(self, run: ExperimentMetrics, point: SweepPoint, figure: SweptFigure) -> Measure:
        d = point.data
        if figure.key == "speed":
            return Measure(1.0 / np.array(d["reps"], dtype=np.float64))
        units = [np.asarray(u, dtype=np.float64) for u in d["units"]]
        values = np.concatenate(units)
        reps = np.concatenate([np.full(u.size, i, dtype=np.int64) for i, u in enumerate(units)])
        return Measure(
            np.array(d["reps"], dtype=np.float64),
            UnitSamples(values, reps, int(values.size)),
            (int(d["bad"][0]), int(d["bad"][1])),
        )

    def comparison_notes(
        self, runs: Sequence[ExperimentMetrics], max_samples: int | None
    ) -> list[str]:
        return ["toy note"]

    def history_values(self, run: ExperimentMetrics, metric: str) -> dict[str, F64]:
        if metric != "wait":
            return {}
        return {k: np.array(p["reps"], dtype=np.float64) for k, p in run.metrics["points"].items()}

    def history_higher_is_better(self, metric: str) -> bool:
        return False


def _run(rid: str, shift: float, seed: int, created: str) -> ExperimentMetrics:
    rng = np.random.default_rng(seed)
    points = {}
    for key in ("big", "small"):
        units = [rng.normal(1.0 + shift, 0.2, 40) for _ in range(4)]
        points[key] = {
            "reps": [float(u.mean()) for u in units],
            "units": [u.tolist() for u in units],
            "bad": [2, 200],
        }
    record = {"id": rid, "name": "toy", "created": created, "spec_hash": "h"}
    return ExperimentMetrics(id=rid, metrics={"points": points}, record=record)


def test_built_in_families_offer_comparisons() -> None:
    assert isinstance(family("jobflow"), SweptComparable)
    assert isinstance(family("net"), Comparable) and isinstance(family("study"), Comparable)


def test_a_toy_family_is_compared_point_by_point() -> None:
    toy = Toy()
    assert isinstance(toy, SweptComparable)
    a, same, slow = _run("a", 0.0, 1, "1"), _run("b", 0.0, 2, "2"), _run("c", 0.5, 3, "3")
    c = compare_points(toy, [a, same, slow])
    assert [p.key for p in c.points] == ["big", "small"]
    assert c.points[0].offered_rate_per_s == 0.0 and c.points[1].indices == {"a": 1, "b": 1, "c": 1}
    assert c.key_metrics == ("wait",) and "toy note" in c.notes
    wait = c.points[0].metric("wait")
    assert wait is not None
    d_same, d_slow = wait.diffs
    assert d_slow.test == sig.WELCH_CLUSTERED and d_slow.verdict == "regressed"
    assert not d_same.significant
    assert wait.values[0].n == 4 and wait.values[0].jobs == wait.values[0].jobs_total == 160
    bad = c.points[0].metric("bad")
    assert bad is not None and bad.diffs[0].test == sig.FISHER and not bad.diffs[0].significant
    speed = c.points[0].metric("speed")
    assert speed is not None and speed.diffs[1].test == sig.WELCH
    assert speed.diffs[1].verdict == "regressed"  # higher is better, it went down
    assert {m.metric: m.better for m in c.metric_info}["speed"] == "higher"
    with pytest.raises(ResultsError, match="no compared metric matches"):
        compare_points(toy, [a, slow], metrics=["nothing*"])


def test_a_toy_family_has_a_history() -> None:
    toy = Toy()
    runs = [_run("c", 0.5, 3, "3"), _run("a", 0.0, 1, "1"), _run("b", 0.0, 2, "2")]
    h = build_history(toy, runs[1], runs, "wait")
    assert [e.experiment for e in h.entries] == ["a", "b", "c"]
    assert h.points == ("big", "small") and h.better == "lower"
    assert h.entries[2].vs_previous["big"].verdict == "regressed"
    with pytest.raises(ResultsError) as exc:
        build_history(toy, runs[1], runs, "nope")
    assert exc.value.fix == "use wait or bad"
