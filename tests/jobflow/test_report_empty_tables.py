"""A table whose numeric columns are all empty is left out of the terminal and the HTML
report (issue 21, item 8: per-component tables full of dashes for load models without
those stages); 'other' latency is rounded to the stamps' nanosecond (no -1.48e-19 s)."""

from __future__ import annotations

import math

import numpy as np

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.latency import latency_durations
from gridbench.jobflow.analysis.reduce import timeline_of
from gridbench.jobflow.analysis.timelines import job_times, timeline_stages
from gridbench.jobflow.events.chain import Segment
from gridbench.report.html import section_html
from gridbench.sections import Column, Table


def table(rows: tuple[tuple[object, ...], ...]) -> Table:
    cols = (Column("stage"), Column("mean", numeric=True), Column("p99", numeric=True))
    return Table("t", "T", cols, rows)  # type: ignore[arg-type]


def test_a_table_of_dashes_has_no_data_and_is_not_drawn() -> None:
    empty = table((("ce_done", None, None), ("bridge_done", math.nan, None)))
    assert not empty.has_data()
    assert section_html(empty) == ""
    full = table((("ce_done", None, 1.5),))
    assert full.has_data() and "ce_done" in section_html(full)


def test_a_table_without_numeric_columns_has_data_when_it_has_rows() -> None:
    t = Table("n", "N", (Column("what"),), (("x",),))
    assert t.has_data()
    assert not Table("n", "N", (Column("what"),), ()).has_data()


def test_other_latency_is_rounded_to_the_nanosecond() -> None:
    # jobs whose two component segments cover all of submit -> done: "other" is exactly 0,
    # where the float sum of the segments' seconds leaves residues like -1.48e-19 s
    rng = np.random.default_rng(7)
    start = np.round(rng.uniform(0, 100, 500), 3)
    t = {"intended": start, "submit": start}
    t["mid"] = start + np.round(rng.uniform(0.1, 9, 500), 6)
    t["client_done"] = t["mid"] + np.round(rng.uniform(0.1, 9, 500), 6)
    chain = fx.simple_chain(
        "submit",
        "mid",
        "client_done",
        segments=[Segment("s1", "submit", "mid"), Segment("s2", "mid", "client_done")],
    )
    tl = timeline_of(fx.times_frame(t), timeline_stages(chain.names()))
    jt = job_times(tl, fx.T0)
    raw = (jt.get("client_done") - jt.get("intended")) - (
        (jt.get("mid") - jt.get("submit")) + (jt.get("client_done") - jt.get("mid"))
    )
    assert np.count_nonzero(raw) > 0  # the residues are there to be rounded away
    other = latency_durations(jt, chain)["other"]
    assert other.tolist() == [0.0] * 500
