"""Compare and history pages: contexts built from :mod:`gridbench.compare` results.

Overlaid charts are plain plotly figure dicts drawn by the same glue as the report;
every label from an experiment passes through :func:`ptext` (plotly renders a subset of
HTML in labels).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from gridbench.compare import load_comparison, load_experiment
from gridbench.compare.dispatch import compare_runs, family_of_runs, history_of
from gridbench.compare.dispatch import metric_choices as dispatch_metric_choices
from gridbench.errors import GridbenchError
from gridbench.family import DEFAULT_KIND
from gridbench.plotting import PALETTE, ptext
from gridbench.store.layout import read_json
from gridbench.web.runs import resolve_in_root

#: Above this many jobs in total, per-job samples are read in the background.
SAMPLES_INLINE_MAX_JOBS = 200_000
_GUARD = threading.Lock()
_READY: set[tuple[str, int]] = set()
_WARMING: set[str] = set()

LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
    "legend": {"orientation": "h", "yanchor": "bottom", "y": -0.35},
    "height": 380,
}


def _labels(xs: list[Any]) -> list[Any]:
    """Axis values: strings (point keys, dates) are shown by plotly as HTML-ish text."""
    return [ptext(x) if isinstance(x, str) else x for x in xs]


def run_paths(root: Path, ids: list[str]) -> list[str]:
    """Only runs inside the results root (never an arbitrary path from a URL), found as the
    CLI finds them (folder name or recorded id)."""
    out = []
    for i in ids:
        run = resolve_in_root(root, i)
        if run is None:
            raise GridbenchError(
                f"no experiment {i!r} in the results store", where="ids", fix="pick from the list"
            )
        out.append(str(run.path))
    return out


def _overlay(
    metric: dict[str, Any], series: dict[str, Any], names: dict[str, str]
) -> dict[str, Any]:
    traces = []
    for k, (eid, s) in enumerate(series.items()):
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": ptext(names.get(eid, eid)),
                "x": _labels(s["x"]),
                "y": s["y"],
                "error_y": {"type": "data", "array": [c or 0 for c in s["ci95"]], "visible": True},
                "marker": {"color": PALETTE[k % len(PALETTE)]},
            }
        )
    unit = f" ({metric['unit']})" if metric.get("unit") else ""
    return {
        "data": traces,
        "layout": {
            **LAYOUT,
            "title": {"text": ptext(f"{metric['label']}{unit}, {metric['better']} is better")},
            "xaxis": {"title": {"text": "offered rate (jobs/s) or point"}},
        },
    }


def _version(path: str) -> tuple[str, int]:
    return path, (Path(path) / "metrics.json").stat().st_mtime_ns


def _jobs(path: str) -> int:
    try:
        m = read_json(Path(path) / "metrics.json")
        return sum(
            int((t.get("jobs") or {}).get("submitted") or 0)
            for p in m.get("points") or []
            for t in p.get("trials") or []
        )
    except (GridbenchError, OSError, AttributeError, TypeError, ValueError):
        return 0


def warm_samples(root: Path, paths: list[str]) -> None:
    """Read the per-job samples of ``paths`` into the comparison cache (slow for big runs)."""
    for path in paths:
        with _GUARD:
            if path in _WARMING:
                continue
            _WARMING.add(path)
        try:
            load_experiment(root, path, samples=True)
            with _GUARD:
                _READY.add(_version(path))
        except (GridbenchError, OSError):
            pass  # the compare page shows the error when asked
        finally:
            with _GUARD:
                _WARMING.discard(path)


def compare_context(root: Path, ids: list[str]) -> dict[str, Any]:
    """Template context of the compare page (``error`` when the runs cannot be compared).

    Per-job samples of big runs take seconds to read from their events: until they are in
    the cache (read in the background), the page compares per-trial values and says so.
    """
    try:
        paths = run_paths(root, ids)
        fam, _ = family_of_runs(root, paths, "compare")
        if fam.name != DEFAULT_KIND:  # another family: its figures (no per-job samples)
            cmp = compare_runs(root, paths).to_dict()
            return _compare_ctx(cmp, pending=False)
        with _GUARD:
            ready = all(_version(p) in _READY for p in paths)
        pending = not ready and sum(_jobs(p) for p in paths) > SAMPLES_INLINE_MAX_JOBS
        if pending:
            threading.Thread(target=warm_samples, args=(root, paths), daemon=True).start()
        cmp = load_comparison(root, paths, samples=not pending).to_dict()
        if not pending:
            with _GUARD:
                _READY.update(_version(p) for p in paths)
    except GridbenchError as exc:
        return {"error": str(exc)}
    return _compare_ctx(cmp, pending=pending)


def _compare_ctx(cmp: dict[str, Any], *, pending: bool) -> dict[str, Any]:
    names = {e["id"]: f"{e['name']} ({e['id']})" for e in cmp["experiments"]}
    charts = [
        {
            "id": f"cmp-{i}",
            "metric": m["metric"],
            "figure": _overlay(m, cmp["series"][m["metric"]], names),
        }
        for i, m in enumerate(cmp["metrics"])
        if m["metric"] in cmp["series"]
    ]
    return {"cmp": cmp, "charts": charts, "names": names, "error": None, "pending": pending}


def metric_choices(root: Path, experiment: str) -> list[str]:
    """Job-flow metric paths, or another family's figure keys, of ``experiment``."""
    try:
        return dispatch_metric_choices(root, run_paths(root, [experiment])[0])
    except GridbenchError:
        return []


def history_context(root: Path, experiment: str, metric: str) -> dict[str, Any]:
    """Template context of the history page."""
    try:
        h = history_of(root, run_paths(root, [experiment])[0], metric).to_dict()
    except GridbenchError as exc:
        return {"error": str(exc)}
    traces = []
    for k, (key, s) in enumerate(h["series"].items()):
        colour = PALETTE[k % len(PALETTE)]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": ptext(key),
                "x": _labels(s["x"]),
                "y": s["y"],
                "text": [ptext(e) for e in s["experiment"]],
                "error_y": {"type": "data", "array": [c or 0 for c in s["ci95"]], "visible": True},
                "marker": {
                    "color": colour,
                    "size": [14 if sig else 8 for sig in s["significant"]],
                    "symbol": ["diamond" if sig else "circle" for sig in s["significant"]],
                },
            }
        )
    fig = {
        "data": traces,
        "layout": {
            **LAYOUT,
            "title": {
                "text": ptext(f"{metric} across runs of {h['name']} ({h['better']} is better)")
            },
            "xaxis": {"title": {"text": "run created"}},
        },
    }
    return {"hist": h, "figure": fig, "error": None}
