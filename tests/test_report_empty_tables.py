"""A table whose numeric columns are all empty is left out of the terminal and the HTML
report (issue 21, item 8: per-component tables full of dashes for load models without
those stages); 'other' latency is rounded to the stamps' nanosecond (no -1.48e-19 s)."""

from __future__ import annotations

import math

import numpy as np

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
    from gridbench.jobflow.analysis.latency import latency_durations

    assert "np.round(overall - comp, 9)" in __import__("inspect").getsource(latency_durations)
    noise = np.array([-1.48e-19, 2.5e-10, 1.0000000004])  # what float sums of seconds leave
    assert np.round(noise, 9).tolist() == [0.0, 0.0, 1.0]
