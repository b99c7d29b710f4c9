"""Samples → figures per phase (pure, polars), for any family.

A family hands its phases (job flow: its trials; io and net: their steps), each a name and
a start and end on the controller's clock; :func:`phase_figures` gives per phase and host
the mean and peak CPU busy share, load, memory and the disk and network rates;
:func:`process_figures` the named processes' CPU and RSS. :func:`client_bound` is the
validity rule: the load's own host saturated before the server did.

Reading (:func:`read_samples`) treats the files as foreign: a bad line is counted and
skipped, a record with a wrong type is left out, never a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.errors import ResultsError
from gridbench.hosts.sampling.sampler import SAMPLES_DIR, sample_files
from gridbench.store.safe_open import CAPS, parse_json, read_store_text

#: CPU busy share (percent of all CPUs) at which a host counts as saturated
SATURATED = 90.0
HOST_COLUMNS = (
    "cpu_busy",
    "load1",
    "mem_used",
    "mem_available",
    "disk_read_bps",
    "disk_write_bps",
    "net_rx_bps",
    "net_tx_bps",
)
_SCHEMA: dict[str, Any] = {
    "host": pl.String,
    "source": pl.String,
    "t": pl.Float64,
    "interval_s": pl.Float64,
    **{c: pl.Float64 for c in HOST_COLUMNS},
}
_PROC_SCHEMA: dict[str, Any] = {
    "host": pl.String,
    "t": pl.Float64,
    "label": pl.String,
    "pid": pl.Int64,
    "cpu_percent": pl.Float64,
    "rss_bytes": pl.Float64,
    "state": pl.String,
}


@dataclass(frozen=True, slots=True)
class Phase:
    """A named stretch of the load (a trial, a rate step, a fault), controller clock (s)."""

    name: str
    start: float
    end: float


@dataclass
class Samples:
    """A run's samples: host figures, process rows and warnings (each a record)."""

    hosts: pl.DataFrame
    processes: pl.DataFrame
    warnings: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: int = 0

    @property
    def empty(self) -> bool:
        return self.hosts.is_empty() and self.processes.is_empty() and not self.warnings


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _text(v: Any, limit: int = 500) -> str | None:
    return v[:limit] if isinstance(v, str) else None


def samples_from_records(records: Sequence[Any]) -> Samples:
    """Samples from record objects (pure; each checked)."""
    hosts: list[dict[str, Any]] = []
    procs: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    for r in records:
        if not isinstance(r, dict):
            continue
        kind, host, t = r.get("kind"), _text(r.get("host"), 64), _num(r.get("t"))
        if host is None or t is None:
            continue
        if kind == "warning":
            warnings.append(
                {
                    "host": host,
                    "t": t,
                    "code": _text(r.get("code"), 64) or "unknown",
                    "text": _text(r.get("text")) or "",
                }
            )
            continue
        if kind == "sample":
            row: dict[str, Any] = {
                "host": host,
                "source": _text(r.get("source"), 16),
                "t": t,
                "interval_s": _num(r.get("interval_s")),
            }
            for c in HOST_COLUMNS:
                row[c] = _num(r.get(c))
            hosts.append(row)
        if kind in ("sample", "processes") and isinstance(r.get("processes"), list):
            for p in r["processes"][:1000]:
                if not isinstance(p, dict) or _text(p.get("label"), 64) is None:
                    continue
                pid = p.get("pid")
                procs.append(
                    {
                        "host": host,
                        "t": t,
                        "label": p["label"][:64],
                        "pid": pid
                        if isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 2**62
                        else None,
                        "cpu_percent": _num(p.get("cpu_percent")),
                        "rss_bytes": _num(p.get("rss_bytes")),
                        "state": _text(p.get("state"), 16),
                    }
                )
    return Samples(
        pl.DataFrame(hosts, schema=_SCHEMA, orient="row").sort("host", "t"),
        pl.DataFrame(procs, schema=_PROC_SCHEMA, orient="row").sort("host", "label", "t"),
        sorted(warnings, key=lambda w: (w["t"], w["host"])),
    )


def read_sample_file(path: Path) -> tuple[list[Any], int]:
    """The records of one sample file and how many lines were unreadable (a torn last
    line, written by a sampler killed mid-line, is neither)."""
    try:
        text = read_store_text(path, cap=CAPS["records"])
    except FileNotFoundError:
        return [], 0
    lines = text.split("\n")
    if lines and lines[-1] and not text.endswith("\n"):
        lines = lines[:-1]  # torn: never acknowledged
    out, bad = [], 0
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(parse_json(line, f"{path}:{i}"))
        except ResultsError:
            bad += 1
    return out, bad


def _planted(run: Path) -> list[dict[str, Any]]:
    """A warning for each host whose samples file is a link or a FIFO: the sampler
    refused to write there and stopped that host (its log says so), so the report says
    it too rather than leave the host out without a word."""
    folder = run / SAMPLES_DIR
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = sorted(p for p in folder.glob("*.jsonl") if p.is_symlink() or not p.is_file())
    return [
        {
            "kind": "warning",
            "host": p.stem,
            "t": 0.0,
            "code": "unreadable",
            "text": f"{SAMPLES_DIR}/{p.name} is not a regular file (a link or a FIFO put "
            f"there): {p.stem} was not sampled into it; remove it before the next run",
        }
        for p in found
    ]


def read_samples(run: Path) -> Samples:
    """Every host's samples of a run folder (``RUN/samples/*.jsonl``)."""
    records: list[Any] = []
    bad = 0
    for p in sample_files(run):
        try:
            got, b = read_sample_file(p)
        except ResultsError as exc:  # over the cap, say: the other hosts are still read
            got, b = [{"kind": "warning", "host": p.stem, "t": 0.0, "code": "unreadable"}], 0
            got[0]["text"] = str(exc).replace("\n", " ")
        records.extend(got)
        bad += b
    records.extend(_planted(run))
    s = samples_from_records(records)
    s.bad_lines = bad
    return s


def _in_phases(df: pl.DataFrame, phases: Sequence[Phase], at: pl.Expr) -> pl.DataFrame:
    """``df``'s rows inside each phase (``at`` within [start, end)), a ``phase`` column
    added; phases may overlap (a row then counts in each)."""
    parts = [
        df.filter((at >= ph.start) & (at < ph.end)).with_columns(
            phase=pl.lit(ph.name), order=pl.lit(i)
        )
        for i, ph in enumerate(phases)
    ]
    if not parts:
        return df.clear().with_columns(phase=pl.lit("", pl.String), order=pl.lit(0, pl.Int32))
    return pl.concat(parts)


def phase_figures(samples: Samples, phases: Sequence[Phase]) -> pl.DataFrame:
    """Per phase and host: samples, CPU busy mean and max, load1 mean, memory used mean
    and max, disk and network rates' means. A sample belongs to the phase its interval's
    middle falls in."""
    df = samples.hosts
    mid = pl.col("t") - pl.col("interval_s").fill_null(0.0) / 2
    inside = _in_phases(df, phases, mid)
    return (
        inside.group_by("order", "phase", "host", maintain_order=True)
        .agg(
            samples=pl.len(),
            cpu_busy_mean=pl.col("cpu_busy").mean(),
            cpu_busy_max=pl.col("cpu_busy").max(),
            load1_mean=pl.col("load1").mean(),
            mem_used_mean=pl.col("mem_used").mean(),
            mem_used_max=pl.col("mem_used").max(),
            disk_read_bps=pl.col("disk_read_bps").mean(),
            disk_write_bps=pl.col("disk_write_bps").mean(),
            net_rx_bps=pl.col("net_rx_bps").mean(),
            net_tx_bps=pl.col("net_tx_bps").mean(),
        )
        .sort("order", "host")
        .drop("order")
    )


def process_figures(samples: Samples, phases: Sequence[Phase]) -> pl.DataFrame:
    """Per phase, host and process label: CPU (percent of one core) mean and max, RSS
    max, and how many samples found it running."""
    df = samples.processes.filter(pl.col("state") == "running")
    inside = _in_phases(df, phases, pl.col("t"))
    return (
        inside.group_by("order", "phase", "host", "label", maintain_order=True)
        .agg(
            samples=pl.len(),
            cpu_mean=pl.col("cpu_percent").mean(),
            cpu_max=pl.col("cpu_percent").max(),
            rss_max=pl.col("rss_bytes").max(),
        )
        .sort("order", "host", "label")
        .drop("order")
    )


@dataclass(frozen=True, slots=True)
class ClientBound:
    """The client-bound rule's finding: ``flagged`` when the load's own host saturated
    (CPU busy mean >= :data:`SATURATED` % over a phase) before any server host did."""

    flagged: bool
    phase: str | None
    reason: str


def client_bound(
    figures: pl.DataFrame,
    phases: Sequence[Phase],
    client: str,
    servers: Sequence[str],
    threshold: float = SATURATED,
) -> ClientBound:
    """The rule over :func:`phase_figures`'s table, phases in time order (pure). It needs
    a sampled server host beside the client: without one it never flags (a load whose
    server runs on its own host, as net's in-process environments, saturates both)."""

    def first_saturated(host: str) -> int | None:
        rows = figures.filter((pl.col("host") == host) & (pl.col("cpu_busy_mean") >= threshold))
        names = set(rows["phase"].to_list())
        for i, ph in enumerate(sorted(phases, key=lambda p: p.start)):
            if ph.name in names:
                return i
        return None

    ordered = sorted(phases, key=lambda p: p.start)
    if figures.filter(pl.col("host") == client).is_empty():
        return ClientBound(False, None, f"the load's host {client!r} was not sampled")
    others = [
        h for h in servers if h != client and not figures.filter(pl.col("host") == h).is_empty()
    ]
    if not others:  # the load and its server on one host (or the server not sampled)
        return ClientBound(
            False,
            None,
            f"no host but the load's ({client!r}) was sampled: the client-bound rule needs a "
            "server host to set it against",
        )
    c = first_saturated(client)
    if c is None:
        return ClientBound(False, None, f"the load's host {client!r} never saturated")
    firsts = [s for s in (first_saturated(h) for h in others) if s is not None]
    if firsts and min(firsts) <= c:
        return ClientBound(False, None, "a server host saturated no later than the load's host")
    name = ordered[c].name
    return ClientBound(
        True,
        name,
        f"client-bound: the load's host {client!r} was {threshold:g}% busy or more during "
        f"{name} before any server host was; the figures measure the client as much as "
        "the server (spread the load over more hosts)",
    )
