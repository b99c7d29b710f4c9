"""Latency percentiles from an HDR histogram (PyPI ``hdrhistogram``), and the sample
statistics net reports beside them.

**Precision.** Values are recorded in nanoseconds into a histogram covering 1 ns to one
hour with 3 significant digits: a percentile is the highest value equivalent to the
recorded one within its bucket, so it is within 0.1% of an exact sample quantile's
value (e.g. 1,000,000 ns reads back as 1,000,447 ns). Values above an hour are clamped
to the top bucket. Means, standard deviations, minima and maxima are computed exactly
from the samples, not from the histogram.

**Percentiles the sample cannot carry are withheld.** p99 needs at least 100 samples and
p99.9 at least 1000 (one sample above the percentile on average); with fewer the value
would only restate the maximum, so it is ``None`` and the analysis lists it as withheld
(:mod:`gridbench.messaging.validity`, rule ``few_samples``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
from hdrh.histogram import HdrHistogram  # type: ignore[import-untyped]  # no stubs

#: Histogram range and precision (ns).
LOWEST_NS: Final = 1
HIGHEST_NS: Final = 3_600_000_000_000
SIGNIFICANT_DIGITS: Final = 3
PRECISION_NOTE: Final = (
    "percentiles from an HDR histogram of ns values, 3 significant digits (within 0.1%); "
    "mean, sd, min and max exact"
)

#: name, percentile, the fewest samples that carry it
PERCENTILES: Final[tuple[tuple[str, float, int], ...]] = (
    ("p50", 50.0, 1),
    ("p90", 90.0, 10),
    ("p99", 99.0, 100),
    ("p999", 99.9, 1000),
)


def histogram(values_ns: Sequence[int] | np.ndarray[Any, Any]) -> HdrHistogram:
    """An HDR histogram of ``values_ns`` (negative values count as 0, huge ones clamp)."""
    h = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
    a = np.clip(np.asarray(values_ns, dtype=np.int64), 0, HIGHEST_NS)
    if a.size:
        vals, counts = np.unique(a, return_counts=True)
        for v, c in zip(vals.tolist(), counts.tolist(), strict=True):
            h.record_value(int(v), int(c))
    return h


def percentiles_ms(values_ns: Sequence[int] | np.ndarray[Any, Any]) -> dict[str, float | None]:
    """p50, p90, p99 and p999 in ms; a percentile the sample is too small for is None."""
    n = len(values_ns)
    out: dict[str, float | None] = {name: None for name, _, _ in PERCENTILES}
    if n == 0:
        return out
    h = histogram(values_ns)
    for name, q, need in PERCENTILES:
        if n >= need:
            out[name] = h.get_value_at_percentile(q) / 1e6
    return out


def withheld(n: int) -> list[str]:
    """The percentiles a sample of ``n`` values is too small for."""
    return [name for name, _, need in PERCENTILES if 0 < n < need]


def describe_ms(values_ns: Sequence[int] | np.ndarray[Any, Any]) -> dict[str, float | None]:
    """``{mean, median, sd, sd_pct, min, max, p50, p90, p99, p999}`` in ms of ns samples:
    exact mean and median (the median is what floor ratios use: no histogram rounding at
    the factor's boundary), sample sd (ddof 1; None under 2 samples), sd as a percentage
    of the mean, exact extremes, HDR percentiles (None where the sample cannot carry them)."""
    # in ns, then scaled: equal integer samples give an sd of exactly 0
    a = np.asarray(values_ns, dtype=np.float64)
    out: dict[str, float | None] = {
        "mean": None,
        "median": None,
        "sd": None,
        "sd_pct": None,
        "min": None,
        "max": None,
    }
    if a.size:
        mean = float(a.mean())
        out.update(
            mean=mean / 1e6,
            median=float(np.median(a)) / 1e6,
            min=float(a.min()) / 1e6,
            max=float(a.max()) / 1e6,
        )
        if a.size >= 2:
            sd = float(a.std(ddof=1))
            out["sd"] = sd / 1e6
            out["sd_pct"] = sd / mean * 100.0 if mean > 0 else None
    out.update(percentiles_ms(values_ns))
    return out


def spread(values: Sequence[float]) -> dict[str, float | None]:
    """``{mean, sd, min, max}`` of a few repeated figures (sd None under 2)."""
    a = np.asarray(values, dtype=np.float64)
    if not a.size:
        return {"mean": None, "sd": None, "min": None, "max": None}
    return {
        "mean": float(a.mean()),
        "sd": float(a.std(ddof=1)) if a.size >= 2 else None,
        "min": float(a.min()),
        "max": float(a.max()),
    }
