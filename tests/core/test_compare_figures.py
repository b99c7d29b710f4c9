"""The generic figure comparison (compare/figures.py) on synthetic figures: a real
difference is found, a null one is not flagged, Benjamini-Hochberg is applied across the
figures, the direction comes from higher_is_better, missing keys are reported; and the
result is the job-flow model (terminal renderer and JSON work unchanged)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from gridbench.compare import significance as sig
from gridbench.compare.command import render_comparison, render_history
from gridbench.compare.figures import POINT, FigureRun, compare_figures, figure_history
from gridbench.compare.model import ExperimentMetrics, Settings
from gridbench.errors import ResultsError
from gridbench.family import Figure


def fig(
    key: str, samples: np.ndarray | list[float], better: bool | None = False, unit: str = "s"
) -> Figure:
    return Figure(key, f"label of {key}", unit, tuple(float(x) for x in samples), better)


def run(rid: str, *figs: Figure, created: str = "", name: str = "spec") -> FigureRun:
    record = {"id": rid, "name": name, "created": created or rid, "spec_hash": "h"}
    return FigureRun.of(ExperimentMetrics(id=rid, metrics={}, record=record), figs)


def normal(seed: int, mean: float, sd: float = 1.0, n: int = 30) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def test_real_difference_is_found_and_null_is_not() -> None:
    a = run("a", fig("t", normal(1, 10.0)), fig("same", normal(2, 5.0)))
    b = run("b", fig("t", normal(3, 13.0)), fig("same", normal(4, 5.0)))
    c = compare_figures([a, b])
    assert [p.key for p in c.points] == [POINT]
    t = c.points[0].metric("t")
    same = c.points[0].metric("same")
    assert t is not None and same is not None
    [dt] = t.diffs
    assert dt.significant and dt.verdict == "regressed"  # lower is better, it went up
    assert dt.test == sig.WELCH and dt.p_adjusted is not None and dt.p_adjusted < 1e-6
    assert dt.relative == pytest.approx(0.3, abs=0.1)
    [ds] = same.diffs
    assert not ds.significant and ds.verdict == "unchanged"
    base = t.values[0]
    assert base.n == 30 and base.value == pytest.approx(10.0, abs=0.6)
    assert base.ci95 is not None and 0.2 < base.ci95 < 0.6  # ~ 2.05 * 1 / sqrt(30)
    assert base.min is not None and base.max is not None and base.min < base.value < base.max
    assert [s for _, _, s in [(p, m, d) for p, m, d in c.significant()]] == [dt]


def test_direction_comes_from_higher_is_better() -> None:
    up_a, up_b = normal(5, 100.0), normal(6, 150.0)
    a = run("a", fig("rate", up_a, True), fig("time", up_a, False), fig("count", up_a, None))
    b = run("b", fig("rate", up_b, True), fig("time", up_b, False), fig("count", up_b, None))
    c = compare_figures([a, b])
    verdicts = {m.metric: m.diffs[0].verdict for m in c.points[0].metrics}
    assert verdicts == {"rate": "improved", "time": "regressed", "count": "changed"}
    assert {i.metric: i.better for i in c.metric_info} == {
        "rate": "higher",
        "time": "lower",
        "count": "neither",
    }


def test_min_effect_holds_back_a_tiny_significant_change() -> None:
    a = run("a", fig("t", normal(7, 100.0, 0.1, 200)))
    b = run("b", fig("t", normal(8, 101.0, 0.1, 200)))  # 1%: p tiny, effect below 5%
    [d] = compare_figures([a, b]).points[0].metrics[0].diffs
    assert d.p_adjusted is not None and d.p_adjusted < 1e-10
    assert not d.significant
    [d] = compare_figures([a, b], settings=Settings(min_effect=0.005)).points[0].metrics[0].diffs
    assert d.significant and d.verdict == "regressed"


def test_benjamini_hochberg_across_the_figures() -> None:
    rng = np.random.default_rng(11)
    base, other = [], []
    for i in range(8):
        shift = 0.9 if i == 0 else 0.0  # one modest real change among seven null ones
        base.append(fig(f"f{i}", rng.normal(10.0, 1.0, 12)))
        other.append(fig(f"f{i}", rng.normal(10.0 + shift * 3, 1.0, 12)))
    c = compare_figures([run("a", *base), run("b", *other)])
    diffs = [m.diffs[0] for m in c.points[0].metrics]
    raw = np.array([d.p_value for d in diffs], dtype=np.float64)
    adj = np.array([d.p_adjusted for d in diffs], dtype=np.float64)
    np.testing.assert_allclose(adj, sig.benjamini_hochberg(raw))
    assert (adj >= raw - 1e-15).all() and (adj > raw).any()
    # BH by hand: p_(i) * m / i, made monotone from the largest down
    order = np.argsort(raw)
    m = raw.size
    scaled = raw[order] * m / np.arange(1, m + 1)
    expected = np.minimum.accumulate(scaled[::-1])[::-1].clip(max=1.0)
    np.testing.assert_allclose(adj[order], expected)


def test_missing_keys_are_reported() -> None:
    a = run("a", fig("both", [1, 2, 3]), fig("only-a", [1, 2, 3]), fig("ab", [1, 2, 3]))
    b = run("b", fig("both", [1, 2, 3]), fig("only-b", [4, 5, 6]), fig("ab", [1, 2, 3]))
    c3 = run("c", fig("both", [1, 2, 3]))
    c = compare_figures([a, b, c3])
    assert [m.metric for m in c.points[0].metrics] == ["both", "ab"]
    assert dict(c.unmatched) == {"a": ("only-a",), "b": ("only-b",)}
    assert any("ab is missing from c" in n for n in c.notes)
    ab = c.points[0].metric("ab")
    assert ab is not None and [v.experiment for v in ab.values] == ["a", "b"]
    with pytest.raises(ResultsError, match="no figure of the baseline"):
        compare_figures([run("x", fig("p", [1, 2])), run("y", fig("q", [1, 2]))])
    with pytest.raises(ResultsError, match="at least two"):
        compare_figures([a])
    with pytest.raises(ResultsError) as exc:
        compare_figures([a, b], metrics=["nothing*"])
    assert exc.value.where == "--metric" and "both" in (exc.value.fix or "")


def test_untestable_figures_say_so_and_repeated_keys_are_noted() -> None:
    a = run("a", fig("one", [1.0]), fig("const", [2.0, 2.0]), fig("dup", [1, 2]), fig("dup", [9]))
    b = run("b", fig("one", [2.0]), fig("const", [3.0, 3.0]), fig("dup", [1, 2]))
    c = compare_figures([a, b])
    for key in ("one", "const"):
        m = c.points[0].metric(key)
        assert m is not None
        [d] = m.diffs
        assert d.test is None and d.p_adjusted is None and not d.significant and d.note
    one = c.points[0].metric("one")
    assert one is not None and one.values[0].ci95 is None and one.values[0].n == 1
    assert any("dup" in n and "more than once" in n for n in c.notes)


def test_result_renders_in_the_terminal_and_as_json() -> None:
    a = run("a", fig("wall", normal(1, 1.0, 0.05, 10)))
    b = run("b", fig("wall", normal(2, 2.0, 0.05, 10)))
    c = compare_figures([a, b])
    out = io.StringIO()
    render_comparison(c, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "wall (s)" in text and "point all" in text and "worse" in text
    data = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    assert data["schema"] == "gridbench.compare/1" and data["significant_count"] == 1
    assert data["points"][0]["metrics"]["wall"]["diffs"][0]["verdict"] == "regressed"
    assert data["series"]["wall"]["b"]["x"] == [POINT]


def test_history_oldest_first_with_changes_tested() -> None:
    runs = [
        run("r3", fig("t", normal(3, 20.0, 0.5, 10)), created="2026-01-03"),
        run("r1", fig("t", normal(1, 10.0, 0.5, 10)), created="2026-01-01"),
        run("r2", fig("t", normal(2, 10.0, 0.5, 10)), created="2026-01-02"),
        run("r0", fig("other", [1, 2]), created="2025-12-31"),
    ]
    h = figure_history(runs[1], runs, "t", skipped={"rx": "not analysed"})
    assert [e.experiment for e in h.entries] == ["r1", "r2", "r3"]
    assert h.points == (POINT,) and h.better == "lower" and h.reference == "r1"
    assert h.entries[0].vs_previous == {}
    d2, d3 = h.entries[1].vs_previous[POINT], h.entries[2].vs_previous[POINT]
    assert d2.baseline == "r1" and not d2.significant
    assert d3.baseline == "r2" and d3.significant and d3.verdict == "regressed"
    assert h.skipped == {"rx": "not analysed", "r0": "has no figure t"}
    out = io.StringIO()
    render_history(h, Console(file=out, width=200, color_system=None))
    assert "worse" in out.getvalue()
    assert json.loads(json.dumps(h.to_dict(), allow_nan=False))["series"][POINT]["y"][0] == (
        pytest.approx(10.0, abs=0.5)
    )
    with pytest.raises(ResultsError, match="has no figure 'nope'") as exc:
        figure_history(runs[1], runs, "nope")
    assert "t" in (exc.value.fix or "")


class _Plain:
    """A family without figures (not Comparable)."""

    name = "plain"
    schema = "gridbench.plain/1"


def _store(root: Path, kinds: dict[str, str | None]) -> None:
    for rid, kind in kinds.items():
        (root / rid).mkdir(parents=True)
        exp = {"id": rid, "name": "s", **({"kind": kind} if kind else {})}
        (root / rid / "experiment.json").write_text(json.dumps(exp))


def test_dispatch_refuses_what_it_cannot_compare_in_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gridbench.compare import dispatch

    real = dispatch.family
    monkeypatch.setattr(dispatch, "family", lambda n: _Plain() if n == "plain" else real(n))
    _store(tmp_path, {"p1": "plain", "p2": "plain", "j1": None})
    with pytest.raises(ResultsError) as exc:
        dispatch.compare_runs(tmp_path, ["p1", "p2"])
    assert "'gridbench compare' does not apply to plain runs" in exc.value.message
    with pytest.raises(ResultsError, match="does not apply to plain runs"):
        dispatch.history_of(tmp_path, "p1", "x")
    with pytest.raises(ResultsError) as exc:
        dispatch.compare_runs(tmp_path, ["j1", "p1"])
    assert "different benchmark families" in exc.value.message
    assert "j1 is jobflow" in exc.value.message and exc.value.fix
    assert dispatch.metric_choices(tmp_path, "p1") == []
    with pytest.raises(ResultsError, match="no experiment 'nope'"):
        dispatch.compare_runs(tmp_path, ["p1", "nope"])
