"""Jobs waiting in a segment over time (seed Figure 24)."""

from __future__ import annotations

import numpy as np
import pytest

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.queues import (
    growth_window,
    in_queue,
    queue_max,
    queue_metrics,
    queue_segments,
    queue_series,
)
from gridbench.jobflow.analysis.trial import analyze_trial


def test_queue_length_max_and_final_by_hand() -> None:
    starts = np.array([0.0, 1.0, 2.0, 3.0])
    ends = np.array([2.5, 3.5, 10.0])  # the fourth job never left
    q = in_queue(starts, ends, np.array([0.0, 1.0, 2.0, 2.5, 3.0, 3.5, 10.0, 11.0]))
    assert q.tolist() == [1, 2, 3, 2, 3, 2, 1, 1]
    assert queue_max(starts, ends) == 3
    m = queue_metrics(starts, ends, None, None)
    assert m == {"max": 3, "final": 1, "growth_per_s": None}


def test_growth_is_offered_minus_capacity() -> None:
    starts = np.arange(0.0, 100.0, 0.5)  # 2 jobs/s arrive
    ends = fx.fifo(starts, 1 / 1.5)  # 1.5 jobs/s leave
    m = queue_metrics(starts, np.sort(ends), 10.0, 90.0)
    assert m["growth_per_s"] == pytest.approx(0.5, rel=0.03)
    assert m["max"] == pytest.approx(50, abs=2)


def test_pure_delay_does_not_look_like_growth() -> None:
    starts = np.arange(0.0, 100.0, 0.5)
    ends = starts + 20.0  # holds 40 jobs (Little's law), never grows
    lo, hi = growth_window(0.0, 100.0, 15.0, 0.0, 20.0)
    assert (lo, hi) == (20.0, 100.0)  # after the fill-up of one median latency
    assert queue_metrics(starts, ends, lo, hi)["growth_per_s"] == pytest.approx(0.0, abs=0.01)


def test_queue_segments_cover_declared_pairs_and_overall() -> None:
    names = [q for q, _, _ in queue_segments(fx.edgi_chain())]
    assert names[:4] == ["ce_prep", "bridge_prep", "dg", "ce_finish"]
    assert {
        "submit->ce_entry",
        "ce_submit->bridge_entry",
        "ce_done->client_done",
        "overall",
    } <= set(names)


def test_queue_series_is_bounded() -> None:
    starts = np.arange(0.0, 1000.0, 0.1)
    t, v, down = queue_series(starts, starts + 5.0, 500)
    assert t.size == 500 and down
    assert v.max() == pytest.approx(50, abs=1)
    t2, v2, down2 = queue_series(np.array([0.0, 1.0]), np.array([2.0]), 500)
    assert not down2 and t2.tolist() == [0.0, 1.0, 2.0] and v2.tolist() == [1.0, 2.0, 1.0]


def test_finishing_queue_grows_linearly_only_past_capacity() -> None:
    """The CREAM story: jobs pile up in ce_finish while submission runs."""
    cap = 50 / 60
    growth = {}
    for rate in (40 / 60, 60 / 60):
        t = fx.simulate_edgi(rate, 300, finish_capacity=cap, seed=5)
        m = analyze_trial(fx.info(rate=rate, planned=300), fx.times_frame(t)).metrics
        growth[rate] = m["queues"]["ce_finish"]["growth_per_s"]
        assert abs(m["queues"]["dg"]["growth_per_s"]) < 0.02  # the grid only delays
    assert abs(growth[40 / 60]) < 0.02
    assert growth[1.0] == pytest.approx(1.0 - cap, rel=0.15)
