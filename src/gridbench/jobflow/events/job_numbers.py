"""A job's number read back from its id, and its id made from the number.

gridbench names job ``i`` of a trial ``<trial id>-<i zero-padded to 6 digits>``
(:func:`job_name`; the controller and its agents alike). Analysis keys its per-job table
by that number when every id of a trial has exactly that form, so the form is checked in
full: ``000042`` and ``1234567`` are numbers, ``0000042``, ``+00042``, `` 42`` and
``42`` are not (each number has one id, each id at most one number).

Reading gives the number in the column ``job_no`` (:data:`JOB_NO`), -1 for an id not of
that form: :func:`arrow_job_numbers` straight from a columnar log's bytes (no string is
made; a block of ids of several widths goes to the polars form), :func:`job_number_expr`
from a polars column (a CSV log, a frame in memory).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from gridbench.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    import pyarrow as pa
    from numpy.typing import NDArray
else:  # imported on first use: job_name (every trial's requests) needs none of them
    np = lazy_module("numpy")
    pl = lazy_module("polars")
    pa = lazy_module("pyarrow")

#: job ``i`` of a trial is named ``<trial id>-<i zero-padded to this many digits>``; the
#: analysis keys its per-job table by the number when every id of a trial has this form
JOB_DIGITS: Final = 6
#: the column that carries each event's job number in place of ``job``
JOB_NO: Final = "job_no"
#: the most digits a job number may have (it must fit an int64)
MAX_DIGITS: Final = 18


def job_prefix(trial_id: str) -> str:
    """What every job name of trial ``trial_id`` starts with."""
    return f"{trial_id}-"


def job_name(prefix: str, number: int) -> str:
    """The id of job ``number`` whose trial's ids start with ``prefix``."""
    return prefix + str(number).zfill(JOB_DIGITS)


def job_name_expr(prefix: str, numbers: pl.Expr) -> pl.Expr:
    """:func:`job_name` of each of ``numbers`` (an Int64 expression)."""
    return pl.lit(prefix) + numbers.cast(pl.String).str.zfill(JOB_DIGITS)


def job_number_expr(prefix: str, jobs: pl.Expr) -> pl.Expr:
    """Each of ``jobs`` (ids) as its number when it is ``prefix`` then a number in
    :func:`job_name`'s form, else -1 (a null id too)."""
    # ASCII digits only: the regex's \d would take any script's (a "٤٢" the cast refuses)
    d, digits = "[0-9]", JOB_DIGITS
    form = rf"^{re.escape(prefix)}(?:{d}{{{digits}}}|[1-9]{d}{{{digits},{MAX_DIGITS - 1}}})$"
    number = jobs.str.slice(len(prefix)).cast(pl.Int64, strict=False).fill_null(-1)
    return pl.when(jobs.str.contains(form)).then(number).otherwise(-1)


#: ids parsed at a time: each step's arrays stay in cache (measured on a million ids:
#: 10 ms against 18 ms in one piece)
BLOCK_IDS: Final = 32_768


def arrow_job_numbers(jobs: pa.Array, prefix: str) -> NDArray[np.int64]:
    """:func:`job_number_expr` of an Arrow string array, computed on its bytes a block
    of :data:`BLOCK_IDS` at a time; a block whose ids are not all of one length without
    nulls is parsed in polars (a run's ids have one length but around job 10^6)."""
    out = np.empty(len(jobs), np.int64)
    for at in range(0, len(jobs), BLOCK_IDS):
        block = jobs.slice(at, BLOCK_IDS)
        numbers = _of_one_width(block, prefix)
        if numbers is None:
            ids = pl.DataFrame({"job": pl.Series(block, dtype=pl.String)})
            numbers = with_job_numbers(ids, prefix)[JOB_NO].to_numpy()
        out[at : at + len(block)] = numbers
    return out


def _of_one_width(jobs: pa.Array, prefix: str) -> NDArray[np.int64] | None:
    """The numbers of ``jobs`` from their bytes; ``None`` unless the ids are all of one
    length without nulls."""
    n = len(jobs)
    if n == 0 or jobs.null_count or not pa.types.is_string(jobs.type):
        return None
    offsets = np.frombuffer(jobs.buffers()[1], np.int32, n + 1, offset=jobs.offset * 4)
    first, span = int(offsets[0]), int(offsets[-1] - offsets[0])
    width = span // n
    if span != width * n or not bool((np.diff(offsets) == width).all()):
        return None
    p = prefix.encode()
    digits = width - len(p)
    if not JOB_DIGITS <= digits <= MAX_DIGITS:
        return np.full(n, -1, np.int64)
    data = jobs.buffers()[2]
    if width >= _WORD and digits <= _WORD:  # every run below 10^8 jobs
        ok, number = _by_words(data, first, n, width, p)
    else:
        ok, number = _by_bytes(data, first, n, width, p)
    return np.where(ok, number, np.int64(-1))


_WORD = 8
_ZEROS = 0x3030303030303030  # eight "0"
_HIGH = 0xF0F0F0F0F0F0F0F0


def _words(data: pa.Buffer, at: int, n: int, width: int) -> NDArray[np.uint64]:
    """The 8 bytes at ``at`` of each of ``n`` rows of ``width`` bytes, as little-endian
    integers (a strided view; numpy refuses one past the buffer)."""
    return np.ndarray((n,), "<u8", data, at, (width,))


def _by_words(
    data: pa.Buffer, first: int, n: int, width: int, prefix: bytes
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Ids of ``width`` bytes (at least 8), at most 8 of them digits, checked and read 8
    bytes at a time: the prefix a word at a time, the digits as one word (the classic
    SWAR parse: digit pairs, then quads, then the eight)."""
    u64 = np.uint64
    plen, digits = len(prefix), width - len(prefix)
    ok = np.ones(n, np.bool_)
    if plen >= _WORD:  # words from the start, the last one ending at the prefix's end
        for at in [*range(0, plen - _WORD, _WORD), plen - _WORD]:
            want = int.from_bytes(prefix[at : at + _WORD], "little")
            ok &= _words(data, first + at, n, width) == u64(want)
    elif plen:
        mask = (1 << (8 * plen)) - 1
        want = int.from_bytes(prefix, "little")
        ok &= (_words(data, first, n, width) & u64(mask)) == u64(want)
    # the last 8 bytes: the digits, below them the prefix's end (checked), made "0"s
    low = (1 << (8 * (_WORD - digits))) - 1
    y = _words(data, first + width - _WORD, n, width) & u64(~low & (2**64 - 1))
    y |= u64(_ZEROS & low)
    ok &= (y & u64(_HIGH)) == u64(_ZEROS)  # each byte 0x30-0x3f ...
    ok &= ((y + u64(0x0606060606060606)) & u64(_HIGH)) == u64(_ZEROS)  # ... and <= "9"
    if digits > JOB_DIGITS:  # no leading zero past the padding
        ok &= (y >> u64(8 * (_WORD - digits))) & u64(0xFF) != u64(ord("0"))
    y -= u64(_ZEROS)
    y = (y * u64(10) + (y >> u64(8))) & u64(0x00FF00FF00FF00FF)
    y = (y * u64(100) + (y >> u64(16))) & u64(0x0000FFFF0000FFFF)
    y = (y * u64(10000) + (y >> u64(32))) & u64(0xFFFFFFFF)
    return ok, y.view(np.int64)  # below 10^8


def _by_bytes(
    data: pa.Buffer, first: int, n: int, width: int, prefix: bytes
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Ids of ``width`` bytes checked and read a byte column at a time."""
    ids = np.frombuffer(data, np.uint8, n * width, offset=first).reshape(n, width)
    ok = np.ones(n, np.bool_)
    for j, byte in enumerate(prefix):
        ok &= ids[:, j] == byte
    if width - len(prefix) > JOB_DIGITS:  # no leading zero past the padding
        ok &= ids[:, len(prefix)] != ord("0")
    number = np.zeros(n, np.int64)
    for j in range(len(prefix), width):
        d = ids[:, j] - np.uint8(ord("0"))  # a byte below "0" wraps round to above 9
        ok &= d <= 9
        number *= 10
        number += d
    return ok, number


def with_job_numbers(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
    """``frame`` with :data:`JOB_NO` in place of its ``job`` column (parsed in polars)."""
    return frame.select(
        job_number_expr(prefix, pl.col(c)).alias(JOB_NO) if c == "job" else pl.col(c)
        for c in frame.columns
    )


def with_job_names(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
    """``frame`` with ``job`` (:func:`job_name`) in place of its :data:`JOB_NO` column,
    whose numbers are all of the trial's jobs (none -1)."""
    return frame.select(
        job_name_expr(prefix, pl.col(c)).alias("job") if c == JOB_NO else pl.col(c)
        for c in frame.columns
    )
