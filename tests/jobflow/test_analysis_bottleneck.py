"""Bottleneck: the first stage where the throughput ratio breaks, not the smallest ratio."""

from __future__ import annotations

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.bottleneck import (
    Finding,
    corroborated,
    evidence,
    find_bottleneck,
    segment_for_stage,
)

S = ["a", "b", "c", "d"]


def test_first_breaking_stage_not_the_smallest_ratio() -> None:
    f = find_bottleneck(S, {"a": 1.0, "b": 0.6, "c": 0.55, "d": 0.5})
    assert f is not None and f.stage == "b"  # d is smallest, but only inherits b's loss
    assert f.upstream == "a" and f.upstream_ratio == 1.0


def test_breaks_relative_to_upstream() -> None:
    f = find_bottleneck(S, {"a": 1.0, "b": 1.0, "c": 0.7, "d": 0.7})
    assert f is not None and f.stage == "c"


def test_first_stage_can_be_the_bottleneck() -> None:
    f = find_bottleneck(S, {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5})
    assert f is not None and f.stage == "a" and f.upstream == "offered"


def test_gradual_decline_names_the_largest_drop_up_to_the_first_broken_stage() -> None:
    # b 0.93 (not broken), c 0.86 (broken, drop 7.5% from b), d 0.80
    f = find_bottleneck(S, {"a": 1.0, "b": 0.93, "c": 0.86, "d": 0.80})
    assert f is not None and f.stage == "c"


def test_no_bottleneck_within_tolerance_and_missing_ratios() -> None:
    assert find_bottleneck(S, {"a": 1.0, "b": 0.95, "c": 0.92, "d": 0.91}) is None
    assert find_bottleneck(S, {"a": 1.0, "b": 0.75}, tol=0.3) is None
    f = find_bottleneck(S, {"a": 1.0, "b": None, "c": 0.5})
    assert f is not None and f.stage == "c" and f.upstream == "a"
    assert find_bottleneck(S, {}) is None


def test_segment_for_stage() -> None:
    chain = fx.edgi_chain()
    assert segment_for_stage(chain, "ce_done") == "ce_finish"
    assert segment_for_stage(chain, "ce_submit") == "ce_prep"
    assert segment_for_stage(chain, "ce_entry") == "submit->ce_entry"
    assert segment_for_stage(chain, "submit") is None


def test_corroboration_by_queue_growth() -> None:
    f = Finding("ce_done", 0.8, "bridge_done", 1.0)
    assert corroborated(f, 1.0, 0.19) is True  # ~ offered * (1.0 - 0.8)
    assert corroborated(f, 1.0, 0.01) is False
    assert corroborated(f, 1.0, None) is None
    text = evidence(f, "ce_finish", 1.0, 0.01)
    assert "ce_done passes 80%" in text and "not corroborated" in text
    assert "grew by 0.19/s" in evidence(f, "ce_finish", 1.0, 0.19)


def test_tolerance_is_configurable() -> None:
    r = {"a": 1.0, "b": 0.85}
    assert find_bottleneck(["a", "b"], r, tol=0.1) is not None
    assert find_bottleneck(["a", "b"], r, tol=0.2) is None
    assert find_bottleneck(["a", "b"], {"a": 1.0, "b": 0.89}) == Finding("b", 0.89, "a", 1.0)
