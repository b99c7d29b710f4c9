"""The results page body: the run's typed report, drawn by the HTML report's renderer.

The headline, summary, charts and tables are the report's (same sections, same renderer,
same escaping) whatever the run's family; this module only caps every plotted line at the
report's point budget (series written by older or foreign tools may be larger) and caches
the result per metrics.json version.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gridbench import __version__
from gridbench.errors import GridbenchError, ResultsError
from gridbench.family import Family, Sized
from gridbench.pipeline import report_of
from gridbench.plotting import MAX_POINTS, minmax_downsample
from gridbench.report.html import (
    chart_ids,
    charts_html,
    headline_html,
    lead_html,
    summary_html,
    tables_html,
)
from gridbench.sections import Chart, Report
from gridbench.store.layout import RunDir, read_json, write_json


@dataclass(frozen=True)
class ResultsView:
    """Pre-escaped HTML fragments of one analysed run."""

    headline: str
    closed: str
    summary: str
    charts: str
    tables: str
    chart_ids: tuple[str, ...]
    downsampling_note: str
    #: how big the run is in its family's units ("1,234 jobs"), when the family says
    #: (:class:`~gridbench.family.Sized`)
    size: str = ""


def cap_series(obj: Any, max_points: int = MAX_POINTS) -> Any:
    """Every ``{"t", "v"}`` series down-sampled (min/max per bucket) to ``max_points``."""
    if isinstance(obj, Mapping):
        t, v = obj.get("t"), obj.get("v")
        if isinstance(t, list) and isinstance(v, list) and len(t) == len(v) > max_points:
            ts, vs, _ = minmax_downsample(
                np.asarray(t, dtype=float), np.asarray(v, dtype=float), max_points
            )
            return {**obj, "t": ts.tolist(), "v": vs.tolist(), "downsampled": True}
        return {k: cap_series(x, max_points) for k, x in obj.items()}
    if isinstance(obj, list) and obj and isinstance(obj[0], Mapping):
        return [cap_series(x, max_points) for x in obj]
    return obj


def cap_figure(figure: Mapping[str, Any], max_points: int = MAX_POINTS) -> tuple[Any, int]:
    """A figure whose numeric lines longer than ``max_points`` are down-sampled (min/max
    per bucket), and how many lines were."""
    data = figure.get("data")
    if not isinstance(data, list):
        return figure, 0
    traces, capped = [], 0
    for tr in data:
        x, y = (tr.get("x"), tr.get("y")) if isinstance(tr, Mapping) else (None, None)
        if isinstance(x, list) and isinstance(y, list) and len(x) == len(y) > max_points:
            try:
                xs, ys, _ = minmax_downsample(
                    np.asarray(x, dtype=float), np.asarray(y, dtype=float), max_points
                )
            except (TypeError, ValueError):  # categories, not a numeric line
                traces.append(tr)
                continue
            tr = {**tr, "x": xs.tolist(), "y": ys.tolist()}
            capped += 1
        traces.append(tr)
    return {**figure, "data": traces}, capped


def cap_report(report: Report, max_points: int = MAX_POINTS) -> tuple[Report, int]:
    """``report`` with every chart capped (:func:`cap_figure`), and how many lines were."""
    total = 0
    sections: list[Any] = []
    for s in report.sections:
        if isinstance(s, Chart):
            fig, n = cap_figure(s.figure, max_points)
            total += n
            s = dataclasses.replace(s, figure=fig)
        sections.append(s)
    return dataclasses.replace(report, sections=tuple(sections)), total


def size_text(fam: Family, metrics: Mapping[str, Any]) -> str:
    """ "1,234 jobs" when the run's family counts its units of work, else ""."""
    if not isinstance(fam, Sized):
        return ""
    size = fam.run_size(metrics)
    return f"{size.units:,} {size.noun}"


CACHE_FILE = ".web-view.json"  # inside the run directory, next to what it is built from
_GUARD = threading.Lock()
_LOCKS: dict[str, threading.Lock] = {}


def _stamp(run_dir: Path) -> int:
    # analysis writes every series.json before metrics.json: its mtime versions them all
    return (run_dir / "metrics.json").stat().st_mtime_ns


def build_view(run_dir: Path, cache_root: Path | None = None) -> ResultsView:
    """The results fragments of an analysed run (ResultsError if it is not analysed).

    Kept in memory and, with ``cache_root``, on disk (``<run>/.web-view.json``): building
    the report's plotly
    figures costs about a second whatever the run's size, reading them back milliseconds.
    """
    key = str(run_dir)
    with _GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:  # a request arriving while the warm-up builds this view waits for it
        return _cached(key, _stamp(run_dir), str(cache_root) if cache_root else "")


def warm(run_dir: Path, cache_root: Path) -> None:
    """Build (or load) the view of ``run_dir`` so that its first page view is fast."""
    build_view(run_dir, cache_root)


@functools.lru_cache(maxsize=32)
def _cached(run_dir: str, stamp: int, cache_root: str) -> ResultsView:
    path = Path(run_dir)
    cache = path / CACHE_FILE if cache_root else None
    if cache is not None and cache.is_file():
        try:
            data = read_json(cache)
            view = data["view"]
            if data.get("stamp") == stamp and hmac.compare_digest(
                str(data.get("mac")), _mac(stamp, view)
            ):
                view["chart_ids"] = tuple(view["chart_ids"])
                return ResultsView(**view)
        except (GridbenchError, KeyError, TypeError, OSError):
            pass  # rebuilt below
    view_obj = _build(path)
    if cache is not None:
        # a read-only store (or a planted link, refused) still serves, only slower
        with contextlib.suppress(OSError, GridbenchError):
            plain = dataclasses.asdict(view_obj)
            write_json(
                cache, {"stamp": stamp, "mac": _mac(stamp, plain), "view": plain}, indent=None
            )
    return view_obj


KEY_BYTES = 32


def _key_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gridbench" / "web-cache.key"


@functools.cache
def _key() -> bytes:
    """The key that authenticates cached HTML: kept outside the results store, so whoever
    can write the store cannot forge pre-rendered HTML (it would be shown unescaped)."""
    path = _key_file()
    for attempt in range(50):
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            key = None
        if key is not None and len(key) == KEY_BYTES:
            return key
        if key is not None and attempt < 25 and path.stat().st_mtime > time.time() - 1:
            time.sleep(0.01)  # another process may be writing it right now
            continue
        if key is not None:  # truncated or foreign: a weak key would let the store forge HTML
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(KEY_BYTES)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another server made it first: read theirs
            time.sleep(0.01)
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        return key
    raise GridbenchError(
        "cannot create the view-cache key",
        where=str(path),
        fix="remove the file, and check that the directory is writable",
    )


def _mac(stamp: int, view: Any) -> str:
    body = json.dumps([__version__, stamp, view], sort_keys=True, default=list).encode()
    return hmac.new(_key(), body, hashlib.sha256).hexdigest()


def _report(run: RunDir) -> tuple[Family, dict[str, Any], Report]:
    fam, metrics, report = report_of(run)
    if report is None:
        raise ResultsError("this run's family has no typed report", where=str(run.path), fix=None)
    return fam, metrics, report


def _build(path: Path) -> ResultsView:
    run = RunDir(path)
    fam, metrics, report = _report(run)
    report, capped = cap_report(report)
    note = (
        f"Down-sampled on the server: {capped} plotted line(s) are cut to at most "
        f"{MAX_POINTS} points, keeping each bucket's minimum and maximum so peaks survive. "
        "Tables and downloads use the full data."
        if capped
        else f"No down-sampling was needed on the server: every line has at most {MAX_POINTS} "
        "points."
    )
    return ResultsView(
        headline=headline_html(report.headline),
        closed=lead_html(report),
        summary=summary_html(report.summary),
        charts=charts_html(report),
        tables=tables_html(report),
        chart_ids=tuple(chart_ids(report)),
        downsampling_note=note,
        size=size_text(fam, metrics),
    )
