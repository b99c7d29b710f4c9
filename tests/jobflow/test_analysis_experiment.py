"""analyze_run on results directories: the seed's stories end to end (METHODS section 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import test_analysis_fixtures as fx
from gridbench.errors import ResultsError
from gridbench.jobflow.analysis import analyze_run

PER_MIN = 1 / 60


def _sweep(
    run: Path,
    rates: list[float],
    *,
    trials: int = 3,
    n: int = 300,
    capacity: float | None = None,
    cpu: float = 25.0,
    children: int = 0,
    late: set[tuple[int, int]] | None = None,
) -> None:
    for p, rate in enumerate(rates):
        for k in range(trials):
            t = fx.simulate_edgi(
                rate,
                n,
                finish_capacity=capacity,
                seed=100 * p + k,
                submit_late=0.5 if (p, k) in (late or set()) else 0.0,
            )
            info = fx.info(
                trial_id=f"p{p:02d}-t{k:02d}",
                point_index=p,
                trial_index=k,
                rate=rate,
                planned=n,
                cpu_count=4,
            )
            dur = float(np.nanmax(t["client_done"])) + 1
            fx.write_trial(
                run, info, fx.times_frame(t), resources=fx.cpu_samples(dur, cpu, children)
            )
    (run / "experiment.json").write_text(json.dumps({"name": run.name}))


@pytest.fixture(scope="module")
def cream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """20, 40 and 60 jobs/min against a CE that finishes at most 50 jobs/min."""
    run = tmp_path_factory.mktemp("cream")
    _sweep(run, [20 * PER_MIN, 40 * PER_MIN, 60 * PER_MIN], capacity=50 * PER_MIN)
    return run, analyze_run(run, write=True)


def test_cream_finishing_stage_is_named_from_the_third_rate(cream: tuple[Path, dict]) -> None:
    _, m = cream
    assert [p["bottleneck"] for p in m["points"]] == [None, None, "ce_done"]
    b = m["bottleneck"]
    assert b["stage"] == "ce_done" and b["segment"] == "ce_finish"
    assert b["from_rate_per_s"] == pytest.approx(1.0)
    assert b["statement"].startswith("Bottleneck: ce_done (segment ce_finish), first seen at 1/s")
    assert "while upstream bridge_done passes 100%" in b["evidence"]
    assert m["points"][2]["summary"]["bottleneck_corroborated"] is True


def test_cream_finishing_latency_and_queue(cream: tuple[Path, dict]) -> None:
    _, m = cream
    fin = [p["summary"]["latency"]["ce_finish"]["mean"] for p in m["points"]]
    assert fin[2] > 1.5 * fin[1]  # the seed: 262.9 s -> 1796.1 s
    assert fin[1] == pytest.approx(fin[0], rel=0.1)
    growth = [p["summary"]["queues"]["ce_finish"]["growth_per_s"]["mean"] for p in m["points"]]
    assert abs(growth[0]) < 0.02 and abs(growth[1]) < 0.02
    assert growth[2] == pytest.approx(1.0 - 50 / 60, rel=0.15)  # linear growth while submitting
    ratio = m["points"][2]["summary"]["expected_ratio"]
    assert ratio["bridge_done"]["mean"] == pytest.approx(1.0, abs=0.03)
    assert ratio["ce_done"]["mean"] == pytest.approx(50 / 60, abs=0.03)


def test_cream_knee(cream: tuple[Path, dict]) -> None:
    _, m = cream
    k = m["knee"]
    assert k["highest_sustained_rate_per_s"] == pytest.approx(40 / 60)
    assert k["first_failing_rate_per_s"] == pytest.approx(1.0)
    assert k["limited_by"] == "ce_done"
    assert k["capacity_per_s"] == pytest.approx(50 / 60, rel=0.03)
    lo, hi = k["capacity_ci95"]
    assert lo <= k["capacity_per_s"] <= hi
    assert k["statement"].startswith("Sustains up to 0.667/s (40/min); breaks at 1/s (60/min)")


def test_cream_files_follow_the_schema(cream: tuple[Path, dict]) -> None:
    run, m = cream
    on_disk = json.loads((run / "metrics.json").read_text())
    assert on_disk["schema"] == "gridbench.metrics/1" and on_disk["experiment"] == run.name
    assert on_disk["knee"]["capacity_per_s"] == pytest.approx(m["knee"]["capacity_per_s"])
    assert set(on_disk) >= {
        "schema",
        "experiment",
        "load_model",
        "chain",
        "points",
        "knee",
        "bottleneck",
        "validity",
        "thresholds",
    }
    p = on_disk["points"][0]
    assert set(p) >= {"index", "point", "offered_rate_per_s", "trials", "summary", "bottleneck"}
    t = p["trials"][0]
    assert set(t) >= {
        "trial_id",
        "valid",
        "status",
        "jobs",
        "latency",
        "throughput",
        "failures",
        "queues",
        "warmup",
        "validity",
        "bottleneck",
        "background_queue",
        "rates",
    }
    assert set(t["throughput"]["ce_done"]) == {
        "average",
        "steady",
        "expected_ratio",
        "edgi_ratio",
        "count",
        "failures",  # jobs reported failing at the stage (issue 14 item 5)
    }
    assert t["warmup"] == {"method": "fraction", "fraction": 0.15, "trimmed_jobs": 45}
    assert m["validity"] == {"valid": True, "invalid_trials": [], "reasons": []}
    assert len(m["failures_vs_rate"]) == 3
    s = json.loads((run / "trials" / "p02-t00" / "series.json").read_text())
    assert set(s) >= {"punctual", "windowed", "queues", "latency_hist", "offered", "submitted"}
    t2 = on_disk["points"][2]["trials"][0]
    assert s["windowed"]["window_s"] == pytest.approx(t2["window_s"])
    assert t2["window_s"] > 1.0  # max(1 s, duration / 30) with a ~500 s trial

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            if "t" in o and "v" in o:
                assert len(o["t"]) == len(o["v"]) <= 500 and "downsampled" in o
            for v in o.values():
                walk(v)

    walk(s)
    assert s["queues"]["ce_finish"]["v"][-1] >= 0


def test_bridge_null_backend_has_no_bottleneck(tmp_path: Path) -> None:
    """3G Bridge with a null back end: throughput = offered up to 100 jobs/min."""
    _sweep(tmp_path, [r * PER_MIN for r in (20, 60, 100)], trials=2, n=200)
    m = analyze_run(tmp_path)
    assert m["bottleneck"]["stage"] is None
    assert m["bottleneck"]["statement"] == (
        "No bottleneck up to the highest rate tried (1.67/s (100/min))."
    )
    assert m["knee"]["first_failing_rate_per_s"] is None
    assert m["knee"]["highest_sustained_rate_per_s"] == pytest.approx(100 / 60)
    assert not (tmp_path / "metrics.json").exists()  # write=False writes nothing


def test_unicore_client_bound_run_is_flagged(tmp_path: Path) -> None:
    """The client's tools saturated all 4 cores: the run is invalid, not a finding."""
    _sweep(tmp_path, [40 * PER_MIN], trials=2, n=100, cpu=390.0, children=4)
    m = analyze_run(tmp_path)
    v = m["validity"]
    assert v["valid"] is False and v["invalid_trials"] == ["p00-t00", "p00-t01"]
    assert all("the client was the bottleneck" in r for r in v["reasons"])
    t = m["points"][0]["trials"][0]
    assert t["validity"]["client_bound"] and t["validity"]["client_cpu_mean"] == 390.0
    assert m["points"][0]["summary"]["used_trials"] == 0
    assert m["knee"]["statement"].startswith("No valid trial")


def test_invalid_trial_is_excluded_from_the_point_summary(tmp_path: Path) -> None:
    _sweep(tmp_path, [0.5], trials=3, n=100, late={(0, 1)})
    m = analyze_run(tmp_path)
    p = m["points"][0]
    s = p["summary"]
    assert s["valid_trials"] == 2 and s["invalid_trials"] == 1 and s["used_trials"] == 2
    assert s["excluded"][0]["trial_id"] == "p00-t01"
    assert "late" in s["excluded"][0]["reason"]
    valid_lat = [t["latency"]["overall"]["mean"] for t in p["trials"] if t["valid"]]
    assert s["latency"]["overall"]["mean"] == pytest.approx(np.mean(valid_lat))
    assert s["latency"]["overall"]["n"] == 2
    assert m["validity"]["invalid_trials"] == ["p00-t01"]


def test_spec_thresholds_and_warmup_are_used(tmp_path: Path) -> None:
    _sweep(tmp_path, [0.5], trials=1, n=60)
    (tmp_path / "spec.yaml").write_text(
        "name: from-spec\n"
        "warmup: {method: fraction, fraction: 0.2}\n"
        "thresholds:\n"
        "  - {metric: latency.overall.p99, op: '<', value: 1}\n"
        "  - {metric: throughput.client_done.expected_ratio, op: '>=', value: 0.9}\n"
    )
    m = analyze_run(tmp_path)
    assert m["analysis"]["warmup"] == {"method": "fraction", "fraction": 0.2}
    assert m["points"][0]["trials"][0]["warmup"]["trimmed_jobs"] == 12
    assert [t["passed"] for t in m["thresholds"]] == [False, True]
    assert m["thresholds"][0]["actual"] > 60
    explicit = analyze_run(
        tmp_path,
        thresholds=[{"metric": "jobs.completed", "op": "==", "value": 60}],
        warmup="steady_state",
    )
    assert [t["passed"] for t in explicit["thresholds"]] == [True]
    assert explicit["analysis"]["warmup"]["method"] == "steady_state"


def test_bad_results_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="results directory not found"):
        analyze_run(tmp_path / "nope")
    empty = analyze_run(tmp_path)
    assert empty["validity"] == {
        "valid": False,
        "invalid_trials": [],
        "reasons": ["the run has no trials"],
    }
    d = tmp_path / "trials" / "p00-t00"
    d.mkdir(parents=True)
    (d / "trial.json").write_text('{"trial_id": "p00-t00",')
    with pytest.raises(ResultsError) as e:
        analyze_run(tmp_path)
    assert "trial.json" in (e.value.where or "") and e.value.fix
    (d / "trial.json").write_text('{"trial_id": "p00-t00"}')
    with pytest.raises(ResultsError, match="no stage chain"):
        analyze_run(tmp_path)


def test_trial_without_events_is_invalid_not_a_crash(tmp_path: Path) -> None:
    info = fx.info(planned=10)
    fx.write_trial(tmp_path, info, fx.frame([]))
    m = analyze_run(tmp_path, write=True)
    t = m["points"][0]["trials"][0]
    assert t["valid"] is False and "no job completed" in t["validity"]["reasons"]
    assert t["jobs"]["planned"] == 10 and t["jobs"]["completed"] == 0
    json.loads((tmp_path / "metrics.json").read_text())
