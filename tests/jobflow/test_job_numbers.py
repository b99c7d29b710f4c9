"""A job's number read back from its id (events/job_numbers.py): the bytes path a
columnar log takes gives exactly the polars form's numbers, on gridbench's own ids and on
odd ones, and a log read with a job prefix carries the numbers in place of the ids."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridbench.jobflow.events import job_numbers
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.columnar_read import ColumnarScan
from gridbench.jobflow.events.job_numbers import (
    JOB_NO,
    arrow_job_numbers,
    job_name,
    with_job_names,
    with_job_numbers,
)
from gridbench.jobflow.events.log import EventLog
from gridbench.jobflow.events.trial_log import scan_trial_log

PREFIX = "p00-t03-"


def _polars(ids: list[str | None], prefix: str = PREFIX) -> list[int]:
    frame = pl.DataFrame({"job": ids}, schema={"job": pl.String})
    return with_job_numbers(frame, prefix)[JOB_NO].to_list()


def test_gridbench_ids_and_odd_ones_of_the_same_width(monkeypatch: pytest.MonkeyPatch) -> None:
    # ids of one width are read from their bytes: the polars form is not called
    monkeypatch.setattr(job_numbers, "with_job_numbers", _not_called)
    ids = [
        job_name(PREFIX, 42),  # 000042
        job_name(PREFIX, 999_999),
        "p00-t03-+00042",
        "p00-t03- 00042",
        "p00-t03--00042",
        "p00-t09-000042",  # another trial
        "P00-t03-000042",
        "p00-t03-00004a",
        "p00-t03-00004/",  # the byte below "0"
        "p00-t03-00004:",  # the byte above "9"
        "p00-t03-0004٢",  # a digit of another script (two bytes)
        "x" * 14,
    ]
    got = arrow_job_numbers(pa.array(ids, pa.string()), PREFIX)
    assert got.tolist() == _polars(ids) == [42, 999_999, *[-1] * 10]
    # six digits of which one is another script's: no number (nor a null), on either path
    other = ["p00-t03-00004٢"]
    got = arrow_job_numbers(pa.array(other, pa.string()), PREFIX)
    assert got.tolist() == _polars(other) == [-1]


def test_more_digits_have_no_leading_zero() -> None:
    ids = [job_name(PREFIX, 1_000_000), "p00-t03-0100000", "p00-t03-1234567"]
    got = arrow_job_numbers(pa.array(ids, pa.string()), PREFIX)
    assert got.tolist() == _polars(ids) == [1_000_000, -1, 1_234_567]
    wide = [PREFIX + "1" + "0" * 17, PREFIX + "1" + "0" * 18]  # 18 digits; 19 do not fit
    got = arrow_job_numbers(pa.array(wide[:1], pa.string()), PREFIX)
    assert got.tolist() == _polars(wide[:1]) == [10**17]
    got = arrow_job_numbers(pa.array(wide[1:], pa.string()), PREFIX)
    assert got.tolist() == _polars(wide[1:]) == [-1]


def test_a_block_of_several_widths_or_with_nulls_is_parsed_in_polars(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mixed = [job_name(PREFIX, 1), "j1", None, job_name(PREFIX, 1_000_000)]
    assert arrow_job_numbers(pa.array(mixed, pa.string()), PREFIX).tolist() == [1, -1, -1, 10**6]
    # blocks of one width are read from their bytes, the one mixed block in polars
    calls: list[int] = []
    polars_form = job_numbers.with_job_numbers

    def counted(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
        calls.append(frame.height)
        return polars_form(frame, prefix)

    monkeypatch.setattr(job_numbers, "with_job_numbers", counted)
    block = job_numbers.BLOCK_IDS
    ids = [job_name(PREFIX, i) for i in range(block * 2 + 5)]
    ids[block + 7] = "hand-made"
    got = arrow_job_numbers(pa.array(ids, pa.string()), PREFIX)
    assert calls == [block]
    assert got.tolist() == [*range(block + 7), -1, *range(block + 8, block * 2 + 5)]


def _not_called(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
    raise AssertionError("the polars form was called for ids of one width")


_CHARS = st.sampled_from(list("0123456789+- /:ap-t3é٤"))  # ٤: a digit, not ASCII


@settings(max_examples=300, deadline=None)
@given(
    tails=st.lists(st.text(_CHARS, min_size=6, max_size=6), min_size=1, max_size=40),
    head=st.sampled_from([PREFIX, "p00-t03_", "p00-t0é-"]),
)
def test_the_bytes_path_is_the_polars_form(tails: list[str], head: str) -> None:
    ids = [head + t for t in tails]
    got = arrow_job_numbers(pa.array(ids, pa.string()), PREFIX)
    assert got.tolist() == _polars(ids)  # of one width in bytes or not ("é" is two)
    back = [job_name(PREFIX, n) == i for i, n in zip(ids, _polars(ids), strict=True) if n >= 0]
    assert all(back)  # a number's name is the id it came from: one id, one number


def test_a_log_read_with_the_prefix_carries_numbers(tmp_path: Path) -> None:
    ids = [job_name(PREFIX, i) for i in (5, 3, 999_999, 1_000_000)] + ["hand-made"]
    for fmt, log in (("arrow", ArrowEventLog), ("csv", EventLog)):
        d = tmp_path / fmt
        name = "events.arrows" if fmt == "arrow" else "events.csv"
        with log(d / name) as w:
            for k, job in enumerate(ids):
                w.append(job, "submit", k)
        with scan_trial_log(d) as scan:
            assert scan is not None
            frames = list(scan.chunks(["job", "t_ns"], job_prefix=PREFIX))
        got = pl.concat(frames)
        assert got.columns == [JOB_NO, "t_ns"]
        assert got[JOB_NO].to_list() == [5, 3, 999_999, 1_000_000, -1]
        named = with_job_names(got.head(4), PREFIX)
        assert named["job"].to_list() == ids[:4]
    plain = next(ColumnarScan(tmp_path / "arrow" / "events.arrows").frames(["job"]))
    assert plain["job"].to_list() == ids


_PREFIXES = ["p-", "ab-1-", PREFIX, "x-p00-t03-", "run-42-p00-t03-7-"]  # 2, 5, 8, 10, 17 bytes


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.sampled_from(_PREFIXES),
    tails=st.lists(st.text(_CHARS, min_size=6, max_size=9), min_size=1, max_size=30),
    mutate=st.integers(-1, 20),
)
def test_any_prefix_length_and_up_to_nine_digits(
    prefix: str, tails: list[str], mutate: int
) -> None:
    """Prefixes shorter and longer than a word, ids of 6 to 9 digit bytes (a word's
    worth and past it), one id's prefix changed at one byte."""
    width = len(tails[0])
    ids = [prefix + t[:width].ljust(width, "0") for t in tails]
    if 0 <= mutate < len(prefix):
        ids[0] = ids[0][:mutate] + "#" + ids[0][mutate + 1 :]
    got = arrow_job_numbers(pa.array(ids, pa.string()), prefix)
    want = _polars(ids, prefix)
    assert got.tolist() == want
    if 0 <= mutate < len(prefix):
        assert want[0] == -1
