"""Parsing fio's JSON+ output: per-job, per-direction figures and latency histograms.

fio's output is foreign data: it may start with log lines (client mode prefixes
``<host>`` lines), and jobs may report errors. Each problem raises a ResultsError naming
the file and the fio command. Latency histograms (JSON+ ``bins``: latency in ns -> count)
are kept as two numpy arrays, so percentiles can be recomputed after merging clients or
repetitions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gridbench.errors import ResultsError

DIRECTIONS = ("read", "write")
#: Percentiles reported beside every figure (name, percent).
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p999", 99.9),
)


@dataclass
class Histogram:
    """Latency histogram: bin values (ns, ascending) and counts."""

    ns: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    counts: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @classmethod
    def from_bins(cls, bins: Any) -> Histogram:
        if not isinstance(bins, dict) or not bins:
            return cls()
        try:
            ns = np.fromiter((float(k) for k in bins), dtype=np.float64, count=len(bins))
            counts = np.fromiter((int(v) for v in bins.values()), dtype=np.int64, count=len(bins))
        except (TypeError, ValueError):
            return cls()
        order = np.argsort(ns, kind="stable")
        return cls(ns[order], counts[order])

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def merged(self, other: Histogram) -> Histogram:
        """The sum of two histograms (e.g. clients, repetitions)."""
        if other.ns.size == 0:
            return self
        if self.ns.size == 0:
            return other
        ns = np.concatenate([self.ns, other.ns])
        counts = np.concatenate([self.counts, other.counts])
        uniq, inv = np.unique(ns, return_inverse=True)
        return Histogram(uniq, np.bincount(inv, weights=counts).astype(np.int64))

    def percentiles(self, qs: tuple[float, ...]) -> list[float | None]:
        """Percentiles (ns) by the nearest-rank rule on the histogram's cumulative counts."""
        n = self.total
        if n == 0:
            return [None] * len(qs)
        cum = np.cumsum(self.counts)
        ranks = np.ceil(np.asarray(qs) / 100.0 * n).clip(1, n)
        idx = np.searchsorted(cum, ranks, side="left")
        return [float(self.ns[i]) for i in idx]


@dataclass
class JobResult:
    """One fio job's figures in one direction (read or write)."""

    job: str
    client: str
    direction: str
    bytes: int
    kbps: float  # KiB/s, iozone's "kB/s"
    iops: float
    runtime_s: float
    lat_mean_ms: float | None
    lat_ms: dict[str, float | None]
    usr_cpu: float
    sys_cpu: float
    hist: Histogram


def extract_json(text: str, where: str) -> dict[str, Any]:
    """The JSON document in fio's output, skipping leading log lines."""
    start = text.find("\n{")
    start = 0 if text.startswith("{") else (start + 1 if start >= 0 else -1)
    if start < 0:
        raise ResultsError(
            "fio wrote no JSON output",
            where=where,
            fix="run the fio command by hand; it may have failed before starting",
        )
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise ResultsError(
            f"fio output is not valid JSON: {exc.msg} at line {exc.lineno}",
            where=where,
            fix="the output may be truncated (fio killed?) or mixed with other text; re-run it",
        ) from None
    if not isinstance(data, dict):
        raise ResultsError("fio output is not a JSON object", where=where)
    return data


def _num(d: Any, key: str, default: float = 0.0) -> float:
    v = d.get(key, default) if isinstance(d, dict) else default
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


def _job_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(data.get("client_stats"), list):
        return [
            j
            for j in data["client_stats"]
            if isinstance(j, dict) and j.get("jobname") != "All clients"
        ]
    jobs = data.get("jobs")
    return [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []


def parse_fio(data: dict[str, Any], where: str) -> list[JobResult]:
    """Per job and direction figures of a fio JSON+ document (directions with no I/O are
    left out). A job that reports an error raises ResultsError naming it."""
    entries = _job_entries(data)
    if not entries:
        raise ResultsError("fio output holds no jobs", where=where, fix="check the job file")
    out: list[JobResult] = []
    for i, job in enumerate(entries):
        name = str(job.get("jobname", f"job{i}"))
        err = job.get("error", 0)
        if err:
            raise ResultsError(
                f"fio job {name!r} failed with error {err}",
                where=where,
                fix="see fio's message in the saved stderr; the target may be full or read-only",
            )
        client = str(job.get("hostname", "local"))
        for d in DIRECTIONS:
            s = job.get(d)
            if not isinstance(s, dict) or _num(s, "io_bytes") <= 0:
                continue
            lat = s.get("lat_ns") if isinstance(s.get("lat_ns"), dict) else s.get("clat_ns", {})
            hist = Histogram.from_bins(lat.get("bins") if isinstance(lat, dict) else None)
            pct = lat.get("percentile", {}) if isinstance(lat, dict) else {}
            lat_ms: dict[str, float | None] = {}
            from_hist = hist.percentiles(tuple(q for _, q in PERCENTILES))
            for (pname, q), hq in zip(PERCENTILES, from_hist, strict=True):
                v = pct.get(f"{q:.6f}") if isinstance(pct, dict) else None
                ns = float(v) if isinstance(v, int | float) else hq
                lat_ms[pname] = ns / 1e6 if ns is not None else None
            mean = _num(lat, "mean", float("nan"))
            out.append(
                JobResult(
                    job=f"{name}.{i}",
                    client=client,
                    direction=d,
                    bytes=int(_num(s, "io_bytes")),
                    kbps=_num(s, "bw_bytes") / 1024.0 if "bw_bytes" in s else _num(s, "bw"),
                    iops=_num(s, "iops"),
                    runtime_s=_num(s, "runtime") / 1000.0,
                    lat_mean_ms=mean / 1e6 if mean == mean else None,
                    lat_ms=lat_ms,
                    usr_cpu=_num(job, "usr_cpu"),
                    sys_cpu=_num(job, "sys_cpu"),
                    hist=hist,
                )
            )
    return out


def parse_fio_text(text: str, where: str) -> list[JobResult]:
    """:func:`parse_fio` of fio's raw output text."""
    return parse_fio(extract_json(text, where), where)


def row_of(r: JobResult, **keys: Any) -> dict[str, Any]:
    """The stored row of one fio job result."""
    return {
        **keys,
        "job": r.job,
        "client": r.client,
        "direction": r.direction,
        "bytes": r.bytes,
        "kbps": r.kbps,
        "iops": r.iops,
        "runtime_s": r.runtime_s,
        "lat_mean_ms": r.lat_mean_ms,
        "lat_ms": r.lat_ms,
        "usr_cpu": r.usr_cpu,
        "sys_cpu": r.sys_cpu,
        "hist": [r.hist.ns.tolist(), r.hist.counts.tolist()],
    }
