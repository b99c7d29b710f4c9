"""The shared threshold evaluator (gridbench.thresholds) on io-shaped metrics: pass, fail,
unknown paths and scopes failing with a reason, the old io form translated, and the
generic groups (worst document, all/any)."""

from __future__ import annotations

from typing import Any

import pytest

from gridbench.errors import SpecError
from gridbench.io.analysis import table_keys, threshold_document, threshold_scopes
from gridbench.io.load import load_io_spec_text
from gridbench.io.model import LegacyThreshold
from gridbench.paths import PathError, resolve
from gridbench.thresholds import (
    DEFAULT_SCOPE,
    Doc,
    Group,
    Selection,
    ThresholdSpec,
    evaluate_threshold,
    evaluate_thresholds,
)


def _entry(
    target: str, test: str, kbps: float, speedup: float | None, p99: float
) -> dict[str, Any]:
    """A matrix entry as io/analysis.matrix writes it (the fields thresholds read)."""
    return {
        "test": test,
        "target": target,
        "kbps": {"mean": kbps, "std": 1.0, "n": 3},
        "lat_ms": {"p50": p99 / 2, "p99": p99},
        "baseline": "nfs",
        "speedup": speedup,
    }


ENTRIES = [
    _entry("nfs", "write", 100.0, None, 4.0),
    _entry("cand", "write", 40.0, -0.6, 9.0),
    _entry("nfs.v4", "read", 300.0, 2.0, 1.0),  # a target name with a dot
]
BONNIE = [{"target": "cand", "column": "output_block", "kbps": {"mean": 50.0}, "speedup": 0.1}]
CONCURRENCY = [
    {"target": "cand", "test": "write", "clients": 2, "last_done_kbps": {"mean": 70.0}},
]
SCOPES = threshold_scopes(threshold_document(ENTRIES, BONNIE, CONCURRENCY))


def ev(metric: str, op: str, value: Any) -> dict[str, Any]:
    return evaluate_threshold({"metric": metric, "op": op, "value": value}, SCOPES)


def test_io_paths_pass_and_fail() -> None:
    ok = ev("matrix.cand.write.kbps.mean", ">=", 10)
    assert ok == {
        "metric": "matrix.cand.write.kbps.mean",
        "op": ">=",
        "value": 10,
        "point": "all",
        "actual": 40.0,
        "passed": True,
        "where": "iozone matrix",
        "reason": None,
    }
    bad = ev("matrix.cand.write.speedup", ">=", -0.5)
    assert bad["passed"] is False and bad["actual"] == pytest.approx(-0.6)
    assert bad["reason"] == "-0.6 is not >= -0.5"
    assert ev("matrix.cand.write.lat_ms.p99", "<=", 10)["passed"]
    assert ev("matrix.nfs.v4.read.kbps.mean", ">", 200)["passed"]  # dotted target name
    assert ev("bonnie.cand.output_block.speedup", ">", 0)["passed"]
    conc = ev("concurrency.cand.write.2.last_done_kbps.mean", ">=", 80)
    assert not conc["passed"] and conc["actual"] == 70.0 and conc["where"] == "concurrency"


def test_unknown_paths_and_values_fail_with_a_reason() -> None:
    r = ev("matrix.cand.read.kbps.mean", ">=", 1)
    assert r["passed"] is False and r["actual"] is None
    assert "unknown metric path 'matrix.cand.read.kbps.mean'" in r["reason"]
    assert "no 'read' under matrix.cand (known: write)" in r["reason"]
    top = ev("latency.overall.p99", "<", 1)  # a job-flow path on io metrics
    assert (
        not top["passed"]
        and "paths start with one of matrix., bonnie., concurrency." in (top["reason"])
    )
    null = ev("matrix.nfs.write.speedup", ">=", 0)  # the baseline has no speedup
    assert not null["passed"] and "no numeric value (None)" in null["reason"]
    assert "unknown operator" in ev("matrix.cand.write.speedup", "=>", 0)["reason"]
    assert "not a number" in ev("matrix.cand.write.speedup", ">=", "x")["reason"]
    assert "names no metric" in evaluate_threshold({}, SCOPES)["reason"]


def test_old_io_form_is_translated() -> None:
    old = LegacyThreshold(test="write", min_kbps=10, min_speedup=-0.5, max_p99_ms=5)
    new = old.translate(["nfs", "cand", "ssd"], baseline="nfs")  # every non-baseline target
    assert [(t.metric, t.op, t.value) for t in new] == [
        ("matrix.cand.write.kbps.mean", ">=", 10),
        ("matrix.cand.write.speedup", ">=", -0.5),
        ("matrix.cand.write.lat_ms.p99", "<=", 5),
        ("matrix.ssd.write.kbps.mean", ">=", 10),
        ("matrix.ssd.write.speedup", ">=", -0.5),
        ("matrix.ssd.write.lat_ms.p99", "<=", 5),
    ]
    res = [table_keys(r, ["nfs", "cand", "ssd"]) for r in evaluate_thresholds(new, SCOPES)]
    assert [r["passed"] for r in res] == [True, False, False, False, False, False]
    assert res[1]["detail"] == "speedup -0.6 vs limit -0.5"
    assert (res[2]["test"], res[2]["target"], res[2]["ok"]) == ("write", "cand", False)
    assert res[3]["detail"].startswith("no such result: unknown metric path")


def test_io_spec_accepts_both_forms() -> None:
    base = "name: t\ntargets: [{name: nfs, path: /a}, {name: cand, path: /b}]\nbaseline: nfs\n"
    spec, data = load_io_spec_text(
        base + "thresholds:\n"
        "  - {test: read, min_speedup: -0.5}\n"
        "  - {metric: matrix.cand.write.lat_ms.p99, op: '<', value: 20}\n"
    )
    assert spec.thresholds == [
        ThresholdSpec(metric="matrix.cand.read.speedup", op=">=", value=-0.5),
        ThresholdSpec(metric="matrix.cand.write.lat_ms.p99", op="<", value=20),
    ]
    assert data["thresholds"][0] == {"test": "read", "min_speedup": -0.5}  # as written
    with pytest.raises(SpecError, match="threshold target 'zz' is not a target"):
        load_io_spec_text(base + "thresholds: [{test: read, target: zz, min_kbps: 1}]\n")
    with pytest.raises(SpecError, match=r"thresholds\.0\.op"):
        load_io_spec_text(
            base + "thresholds: [{metric: matrix.cand.read.speedup, op: '~', value: 1}]\n"
        )
    with pytest.raises(SpecError, match="no target to apply to"):
        load_io_spec_text(
            "name: t\ntargets: [{name: nfs, path: /a}]\nbaseline: nfs\n"
            "thresholds: [{test: read, min_kbps: 1}]\n"
        )


def test_groups_worst_document_and_any() -> None:
    def docs(*values: float) -> list[Doc]:
        return [Doc({"x": v}, f"doc {v:g}") for v in values]

    def scope(metric: str, point: Any) -> Selection | str:
        if point == "none":
            return "nothing selected"
        groups = [Group("g1", docs(1, 5)), Group("g2", docs(2, 3)), Group("g3", [], "empty")]
        return Selection(
            metric, groups[:2] if point != "with-empty" else groups, any=point == "any"
        )

    scopes = {DEFAULT_SCOPE: scope}

    def one(op: str, value: float, point: Any = "all") -> dict[str, Any]:
        # a mapping, not a ThresholdSpec: these scopes read points the model does not allow
        return evaluate_threshold({"metric": "x", "op": op, "value": value, "point": point}, scopes)

    worst = one("<", 4)
    assert not worst["passed"] and worst["actual"] == 5 and worst["where"] == "doc 5"
    best = one("<", 4, "any")
    assert best["passed"] and best["actual"] == 3 and best["where"] == "doc 3"
    assert one("<", 10)["passed"]
    empty = one("<", 10, "with-empty")
    assert not empty["passed"] and empty["reason"] == "empty" and empty["where"] == "g3"
    assert one("<", 10, "none")["reason"] == "nothing selected"


def test_resolve_keys_with_dots() -> None:
    d = {"m": {"a.b": {"c": 1}, "a": {"b": 2}}, "l": [{"x": 3}]}
    assert resolve(d, "m.a.b") == 2  # a plain key first
    assert resolve({"m": {"a.b": {"c": 1}}}, "m.a.b.c") == 1  # else the key with a dot
    assert resolve(d, "l.0.x") == 3
    with pytest.raises(PathError, match=r"no 'z' under m \(known: a, a.b\)"):
        resolve(d, "m.z")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_limit_that_is_no_finite_number_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="finite number"):
        ThresholdSpec(metric="latency.p99", op="<=", value=value)
