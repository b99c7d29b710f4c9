"""Tables built from metrics.json: the seed's Table 6 and the other report tables."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

import report_fixtures as fx
from gridbench.errors import ResultsError
from gridbench.jobflow.report import rows as T
from gridbench.jobflow.report.model import (
    chain_view,
    check_metrics,
    failure_kinds,
    representative_trial,
    throughput_stages,
)


@pytest.fixture(scope="module")
def metrics() -> dict[str, Any]:
    return fx.make_metrics()


def _cell(rows: list[dict[str, Any]], rpm: float, comp: str) -> dict[str, Any]:
    (row,) = [r for r in rows if r["rate_per_min"] == rpm and r["component"] == comp]
    return row


def test_table6_rows_follow_chain_components_then_other_overall(metrics: dict[str, Any]) -> None:
    rows = T.latency_rows(metrics)
    assert len(rows) == 5 * 6
    first = [r["component"] for r in rows[:6]]
    assert first == ["ce_prep", "bridge_prep", "dg", "ce_finish", "other", "overall"]
    assert [r["rate_per_min"] for r in rows[::6]] == [20.0, 40.0, 60.0, 80.0, 100.0]
    assert rows[0]["label"] == "T2 CE entry → T3 CE submitted to bridge"


@pytest.mark.parametrize("rpm", fx.RATES_PER_MIN)
@pytest.mark.parametrize("comp", [*fx.COMPONENTS, "other"])
def test_table6_avg_equals_seed_numbers(metrics: dict[str, Any], rpm: float, comp: str) -> None:
    # Trial factors 0.95/1.00/1.05 (and 0.95/1.05 where the middle trial is invalid)
    # average to 1, so the mean of trial means is the seed's Table 6 value.
    row = _cell(T.latency_rows(metrics), rpm, comp)
    assert row["avg_s"] == pytest.approx(fx.SEED_TABLE6[rpm][comp], rel=1e-12)
    assert row["min_s"] == pytest.approx(0.95 * fx.SEED_TABLE6[rpm][comp], rel=1e-12)
    assert row["max_s"] == pytest.approx(1.05 * fx.SEED_TABLE6[rpm][comp], rel=1e-12)


def test_table6_equals_fixture_summary_exactly(metrics: dict[str, Any]) -> None:
    rows = T.latency_rows(metrics)
    for p in metrics["points"]:
        for comp in [*fx.COMPONENTS, "other", "overall"]:
            rep = p["summary"]["latency"][comp]
            row = _cell(rows, p["point"]["rate"], comp)
            assert (row["n"], row["avg_s"], row["min_s"], row["max_s"], row["std_s"]) == (
                rep["n"],
                rep["mean"],
                rep["min"],
                rep["max"],
                rep["std"],
            )
            assert row["ci95_s"] == rep["ci95"]


def test_table6_invalid_trial_left_out_of_60_per_min(metrics: dict[str, Any]) -> None:
    row = _cell(T.latency_rows(metrics), 60.0, "ce_finish")
    assert row["n"] == 2
    # std of (0.95x, 1.05x) with ddof=1 is 0.1x/sqrt(2)
    assert row["std_s"] == pytest.approx(0.1 * 1796.15 / math.sqrt(2), rel=1e-9)


def test_table6_overall_is_sum_and_shares_add_to_100(metrics: dict[str, Any]) -> None:
    rows = T.latency_rows(metrics)
    overall = _cell(rows, 20.0, "overall")["avg_s"]
    assert overall == pytest.approx(0.40 + 2.85 + 60.63 + 39.22 + 9.27)
    shares = [_cell(rows, 20.0, c)["share_pct"] for c in [*fx.COMPONENTS, "other"]]
    assert sum(shares) == pytest.approx(100.0)
    assert _cell(rows, 20.0, "dg")["share_pct"] == pytest.approx(100 * 60.63 / 112.37)
    assert _cell(rows, 20.0, "overall")["share_pct"] is None


def test_table6_wide_has_a_column_per_component(metrics: dict[str, Any]) -> None:
    wide = T.latency_wide_rows(metrics)
    assert len(wide) == 5 * len(T.TABLE6_STATS)
    (avg100,) = [r for r in wide if r["rate_per_min"] == 100.0 and r["statistic"] == "avg"]
    assert avg100["ce_finish"] == pytest.approx(4696.42)
    assert avg100["dg"] == pytest.approx(78.69)
    assert avg100["other"] == pytest.approx(222.72)
    (std20,) = [r for r in wide if r["rate_per_min"] == 20.0 and r["statistic"] == "std"]
    assert std20["dg"] == pytest.approx(0.05 * 60.63)


def test_table6_job_basis_pools_valid_trials(metrics: dict[str, Any]) -> None:
    row = _cell(T.latency_rows(metrics, "jobs"), 60.0, "dg")
    p = metrics["points"][2]
    used = [t for t in p["trials"] if t["valid"]]
    assert [t["trial_id"] for t in used] == ["p02-t00", "p02-t02"]
    ns = [t["latency"]["dg"]["n"] for t in used]
    ms = [t["latency"]["dg"]["mean"] for t in used]
    ss = [t["latency"]["dg"]["std"] for t in used]
    n = sum(ns)
    mean = (ns[0] * ms[0] + ns[1] * ms[1]) / n
    var = sum((k - 1) * s * s + k * (m - mean) ** 2 for k, m, s in zip(ns, ms, ss, strict=True))
    assert row["n"] == n
    assert row["avg_s"] == pytest.approx(mean)
    assert row["std_s"] == pytest.approx(math.sqrt(var / (n - 1)))
    assert row["min_s"] == pytest.approx(0.6 * 0.95 * 68.72)
    assert row["max_s"] == pytest.approx(1.9 * 1.05 * 68.72)
    assert row["basis"] == "jobs"


def test_throughput_rows_against_rate(metrics: dict[str, Any]) -> None:
    rows = T.throughput_rows(metrics)
    assert throughput_stages(metrics) == [s for s, _, _ in fx.STAGES]
    (r,) = [r for r in rows if r["rate_per_min"] == 60.0 and r["stage"] == "ce_done"]
    rep = metrics["points"][2]["summary"]["throughput"]["ce_done"]
    assert r["tr"] == "TR7"
    assert r["expected_per_s"] == pytest.approx(1.0)
    assert (r["mean_per_s"], r["std_per_s"], r["ci95_per_s"]) == (
        rep["mean"],
        rep["std"],
        rep["ci95"],
    )
    assert r["mean_per_s"] == pytest.approx(0.70)
    assert r["ratio_mean"] == pytest.approx(0.70 * 1.01)
    assert r["bottleneck"] is True
    (r20,) = [r for r in rows if r["rate_per_min"] == 20.0 and r["stage"] == "ce_done"]
    assert r20["bottleneck"] is False


def test_throughput_trial_rows(metrics: dict[str, Any]) -> None:
    rows = T.throughput_trial_rows(metrics)
    assert len(rows) == 15 * 8
    (r,) = [r for r in rows if r["trial_id"] == "p04-t02" and r["stage"] == "client_done"]
    assert r["average_per_s"] == pytest.approx(0.40 * 1.02 * 100 / 60)
    assert r["edgi_ratio"] == pytest.approx(0.40 * 1.02)


def test_failure_rows_by_kind(metrics: dict[str, Any]) -> None:
    rows = T.failure_rows(metrics)
    assert failure_kinds(metrics) == ["dropped", "submit_timeout", "job_failed", "lost"]
    assert len(rows) == 5 * 4
    (r,) = [r for r in rows if r["rate_per_min"] == 100.0 and r["kind"] == "submit_timeout"]
    assert r["total"] == 30 + 31 + 32
    assert r["mean"] == pytest.approx(31.0)
    assert r["share_of_planned"] == pytest.approx(93 / (3 * 1000))
    # A kind nobody saw at 20/min is zero, not missing.
    (z,) = [r for r in rows if r["rate_per_min"] == 20.0 and r["kind"] == "lost"]
    assert (z["mean"], z["total"]) == (0.0, 0)
    # 60/min: the invalid trial counts in the total but not in the per-trial mean.
    (s,) = [r for r in rows if r["rate_per_min"] == 60.0 and r["kind"] == "submit_timeout"]
    assert s["total"] == 4 + 5 + 6
    assert s["mean"] == pytest.approx(5.0)


def test_threshold_and_validity_rows(metrics: dict[str, Any]) -> None:
    th = T.threshold_rows(metrics)
    assert [t["passed"] for t in th] == [False, True, False]
    assert th[0]["actual"] == pytest.approx(sum(fx.SEED_TABLE6[100.0].values()))
    assert th[2]["actual"] is None
    val = T.validity_rows(metrics)
    assert len(val) == 15
    bad = [v for v in val if not v["valid"]]
    assert [v["trial_id"] for v in bad] == [fx.INVALID_TRIAL]
    assert "background queue grew from 3 to 412" in bad[0]["reasons"]
    assert bad[0]["background_queue_end"] == 412
    assert val[0]["coarse_precision"] == "ce_prep"


def test_outliers_and_points(metrics: dict[str, Any]) -> None:
    out = T.outlier_rows(metrics)
    assert [(o["trial_id"], o["kept"]) for o in out] == [("p02-t01", False), ("p04-t02", True)]
    pts = T.point_rows(metrics)
    assert [p["valid_trials"] for p in pts] == [3, 3, 2, 3, 3]
    assert pts[0]["planned"] == 3 * 200
    assert pts[2]["bottleneck"] == "ce_done"


def test_representative_trial_is_valid_and_closest(metrics: dict[str, Any]) -> None:
    # Trial 1 has factor 1.00, i.e. exactly the point mean when all trials are valid.
    assert representative_trial(metrics["points"][0], metrics) == "p00-t01"
    # At 60/min trial 1 is invalid; trials 0 and 2 tie, the lower index wins.
    assert representative_trial(metrics["points"][2], metrics) == "p02-t00"


def test_all_tables_names(metrics: dict[str, Any]) -> None:
    tabs = T.all_tables(metrics)
    assert set(tabs) >= {"latency", "throughput", "failures", "thresholds", "validity"}
    frame = T.as_frame(tabs["latency"])
    assert frame.height == 30
    assert frame.filter(frame["component"] == "ce_finish")["avg_s"].to_list() == pytest.approx(
        [39.22, 262.90, 1796.15, 2861.87, 4696.42]
    )


def test_null_and_missing_fields_do_not_crash() -> None:
    m = fx.make_metrics()
    m["knee"] = None
    m["thresholds"] = None
    p = m["points"][1]
    p["summary"]["latency"]["dg"] = {"n": 0, "mean": None, "std": None, "min": None,
                                     "max": None, "ci95": None}  # fmt: skip
    del p["summary"]["throughput"]["ce_done"]
    del p["trials"][0]["validity"]
    rows = T.latency_rows(m)
    assert _cell(rows, 40.0, "dg")["avg_s"] is None
    (tp,) = [r for r in T.throughput_rows(m) if r["rate_per_min"] == 40 and r["stage"] == "ce_done"]
    assert tp["mean_per_s"] is None
    assert T.threshold_rows(m) == []
    assert T.validity_rows(m)[3]["reasons"] == ""


def test_generic_chain_without_declared_components() -> None:
    m = fx.make_metrics()
    m["chain"]["segments"] = [
        {"name": "a->b", "start": "submit", "end": "client_done", "component": True}
    ]
    for p in m["points"]:
        p["summary"]["latency"]["a->b"] = {"n": 3, "mean": 1.5, "std": 0.1, "min": 1.4,
                                           "max": 1.6, "ci95": 0.2}  # fmt: skip
    rows = T.latency_rows(m)
    assert [r["component"] for r in rows[:3]] == ["a->b", "other", "overall"]
    assert rows[0]["avg_s"] == 1.5
    assert chain_view(m).segment_label("a->b") == "T1 submit call → T8 client saw done"


def test_check_metrics_rejects_other_schema() -> None:
    m = copy.deepcopy(fx.make_metrics())
    m["schema"] = "gridbench.metrics/0"
    with pytest.raises(ResultsError) as exc:
        check_metrics(m, where="RUN/metrics.json")
    assert exc.value.where == "RUN/metrics.json: schema"
    assert exc.value.fix
    with pytest.raises(ResultsError):
        check_metrics({"schema": "gridbench.metrics/1"})
