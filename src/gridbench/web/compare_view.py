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
from gridbench.compare.change import change_text, metric_scale
from gridbench.compare.dispatch import compare_runs, family_of_runs, history_of
from gridbench.compare.dispatch import metric_choices as dispatch_metric_choices
from gridbench.errors import GridbenchError
from gridbench.family import Sized, family_of
from gridbench.plotting import PALETTE, ptext
from gridbench.store.layout import RunDir, read_json
from gridbench.swept import SweptComparable
from gridbench.web.runs import resolve_in_root
from gridbench.web.terms import in_dashboard_terms

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


def _samples(path: str) -> int:
    """The per-unit samples a comparison of the run reads (0 when its family does not say)."""
    try:
        fam = family_of(RunDir(Path(path)))
        if not isinstance(fam, Sized):
            return 0
        return fam.run_size(read_json(Path(path) / "metrics.json")).samples
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


def compare_context(root: Path, ids: list[str], *, all_charts: bool = False) -> dict[str, Any]:
    """Template context of the compare page (``error`` when the runs cannot be compared).

    Per-job samples of big runs take seconds to read from their events: until they are in
    the cache (read in the background), the page compares per-trial values and says so.
    Charts are drawn for the metrics with a significant difference only, unless
    ``all_charts``.
    """
    try:
        paths = run_paths(root, ids)
        fam, _ = family_of_runs(root, paths, "compare")
        if not isinstance(fam, SweptComparable):  # flat figures (no per-unit samples)
            cmp = compare_runs(root, paths).to_dict()
            return _compare_ctx(cmp, pending=False, all_charts=all_charts)
        with _GUARD:
            ready = all(_version(p) in _READY for p in paths)
        pending = not ready and sum(_samples(p) for p in paths) > SAMPLES_INLINE_MAX_JOBS
        if pending:
            threading.Thread(target=warm_samples, args=(root, paths), daemon=True).start()
        cmp = load_comparison(root, paths, samples=not pending).to_dict()
        if not pending:
            with _GUARD:
                _READY.update(_version(p) for p in paths)
    except GridbenchError as exc:  # said in the dashboard's terms, not the command line's
        return {"error": in_dashboard_terms(str(exc))}
    return _compare_ctx(cmp, pending=pending, all_charts=all_charts)


def _scales(cmp: dict[str, Any]) -> dict[str, float]:
    """Each metric's largest magnitude over the comparison: what "near zero" is against."""
    vals: dict[str, list[float | None]] = {}
    for p in cmp["points"]:
        for name, m in p["metrics"].items():
            vals.setdefault(name, []).extend(v["value"] for v in m["values"])
    return {k: metric_scale(vs) for k, vs in vals.items()}


def _rows(cmp: dict[str, Any], scales: dict[str, float]) -> list[dict[str, Any]]:
    """Every (point, metric) row of the full table, each diff with its change as shown."""
    rows = []
    for p in cmp["points"]:
        for name, m in p["metrics"].items():
            values = {v["experiment"]: v["value"] for v in m["values"]}
            base = values.get(cmp["baseline"])
            diffs = {
                d["experiment"]: {
                    **d,
                    "change": change_text(base, values.get(d["experiment"]), scales[name]),
                }
                for d in m["diffs"]
            }
            rows.append({"key": p["key"], "metric": name, "m": m, "base": base, "diffs": diffs})
    return rows


def _findings(
    rows: list[dict[str, Any]], scales: dict[str, float], names: dict[str, str]
) -> list[dict[str, Any]]:
    """The significant differences, regressions first, each by the size of its change
    against the metric's scale (so near-zero baselines sort sensibly too)."""
    out = []
    for r in rows:
        values = {v["experiment"]: v["value"] for v in r["m"]["values"]}
        for exp, d in r["diffs"].items():
            if not d["significant"]:
                continue
            size = abs(d["difference"] or 0.0) / (scales[r["metric"]] or 1.0)
            out.append(
                {
                    "metric": r["metric"],
                    "key": r["key"],
                    "experiment": names.get(exp, exp),
                    "base": r["base"],
                    "test": values.get(exp),
                    "change": d["change"],
                    "verdict": d["verdict"],
                    "size": size,
                }
            )
    out.sort(key=lambda f: (f["verdict"] != "regressed", -f["size"]))
    return out


def _compare_ctx(cmp: dict[str, Any], *, pending: bool, all_charts: bool) -> dict[str, Any]:
    names = {e["id"]: f"{e['name']} ({e['id']})" for e in cmp["experiments"]}
    scales = _scales(cmp)
    rows = _rows(cmp, scales)
    findings = _findings(rows, scales, names)
    differing = {f["metric"] for f in findings}
    drawable = [m for m in cmp["metrics"] if m["metric"] in cmp["series"]]
    charts = [
        {
            "id": f"cmp-{i}",
            "metric": m["metric"],
            "figure": _overlay(m, cmp["series"][m["metric"]], names),
        }
        for i, m in enumerate(drawable)
        if all_charts or m["metric"] in differing
    ]
    return {
        "cmp": cmp,
        "rows": rows,
        "findings": findings,
        "charts": charts,
        "charts_left_out": len(drawable) - len(charts),
        "all_charts": all_charts,
        "names": names,
        "error": None,
        "pending": pending,
    }


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
