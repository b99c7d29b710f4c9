"""Growth of the load model's main quantity over an experiment's swept parameters.

For every numeric swept parameter with at least 3 distinct values (the other parameters
held fixed), the point means of the load model's main quantity against the parameter,
fitted by :func:`gridbench.growth.fit_growth` (METHODS 1.8).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.growth import MIN_POINTS, fit_growth
from gridbench.jobflow import loads as load_models


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _point_value(p: Mapping[str, Any], path: str) -> float | None:
    """The mean over trials of ``path`` in the point summary (a rep object's mean)."""
    cur: Any = p.get("summary") or {}
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    if isinstance(cur, Mapping):
        cur = cur.get("mean")
    return float(cur) if _is_number(cur) else None


def sweep_growth(
    points: Sequence[Mapping[str, Any]], load_model: str | None
) -> list[dict[str, Any]]:
    """Growth fits of the load model's main quantity against each numeric swept parameter.

    Points are grouped by the values of the other parameters; each group with at least 3
    distinct values of the parameter (and a measured quantity) gets one fit:
    ``{parameter, fixed, quantity, label, unit, x, y, <fit_growth fields>}``, its
    statement ending with '(x = parameter)'.
    """
    model = load_models.find(load_model)
    quantity = model.growth_quantity(points) if model is not None else None
    if quantity is None or len(points) < MIN_POINTS:
        return []
    path, label, unit = quantity  # the load model's main measured quantity
    params: list[str] = []
    for p in points:
        for k in p.get("point") or {}:
            if k not in params:
                params.append(k)
    out: list[dict[str, Any]] = []
    for param in params:
        vals = [(p.get("point") or {}).get(param) for p in points]
        if not all(_is_number(v) for v in vals):
            continue
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for p in points:
            fixed = {k: v for k, v in (p.get("point") or {}).items() if k != param}
            groups.setdefault(json.dumps(fixed, sort_keys=True, default=str), []).append(p)
        for key, members in groups.items():
            pairs = [(float((m.get("point") or {})[param]), _point_value(m, path)) for m in members]
            xy = sorted((x, y) for x, y in pairs if y is not None)
            fit = fit_growth([x for x, _ in xy], [y for _, y in xy], quantity=label, unit=unit)
            if fit is None:
                continue
            fit["statement"] += f" (x = {param})"
            out.append(
                {
                    "parameter": param,
                    "fixed": json.loads(key),
                    "quantity": path,
                    "label": label,
                    "unit": unit,
                    "x": [x for x, _ in xy],
                    "y": [y for _, y in xy],
                    **fit,
                }
            )
    return out
