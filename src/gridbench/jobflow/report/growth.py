"""Growth curves fitted against swept parameters (METHODS 1.8) and the closed models'
per-point results: their rows, statements and sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.jobflow.report.build import Spec, TableDef
from gridbench.jobflow.report.model import (
    Row,
    as_dict,
    as_list,
    num,
    params_label,
    points,
    rate_label,
)
from gridbench.sections import Statements, Status


def growth_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The growth curves fitted against each numeric swept parameter (METHODS 1.8)."""
    rows: list[Row] = []
    for g in as_list(metrics.get("growth")):
        d = as_dict(g)
        coef = as_dict(d.get("coefficients"))
        rows.append(
            {
                "parameter": str(d.get("parameter") or ""),
                "fixed": params_label(d.get("fixed")),
                "quantity": str(d.get("quantity") or ""),
                "unit": str(d.get("unit") or ""),
                "model": str(d.get("model") or ""),
                "form": str(d.get("form") or ""),
                "a": num(coef.get("a")),
                "b": num(coef.get("b")),
                "r2": num(d.get("r2")),
                "n": num(d.get("n")),
                "statement": str(d.get("statement") or ""),
            }
        )
    return rows


def model_statements(metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(point label, statement) of every point's closed-model result, for headlines."""
    out: list[tuple[str, str]] = []
    for p in points(metrics):
        st = as_dict(as_dict(p.get("summary")).get("model")).get("statement")
        if isinstance(st, str) and st:
            out.append((rate_label(p), st))
    return out


def growth_statements(metrics: Mapping[str, Any]) -> list[str]:
    """The growth-fit sentences, e.g. 'submission time grows quadratically: 0.0062·x² s'."""
    return [r["statement"] for r in growth_rows(metrics) if r["statement"]]


_GROWTH = (
    Spec("parameter", "parameter"),
    Spec("held fixed", "fixed"),
    Spec("quantity", "quantity"),
    Spec("model", "form"),
    Spec("a", "a", True),
    Spec("b", "b", True),
    Spec("R²", "r2", True),
    Spec("statement", "statement"),
)


#: The fitted growth curves (the page; the terminal has their sentences).
growth_table = TableDef(
    "growth",
    "Growth curves",
    growth_rows,
    _GROWTH,
    note="Least-squares fits of constant, linear, x·ln x and quadratic growth, chosen by "
    "AIC (the simplest model within 2 of the best).",
    scope="full",
)


def results_statements(metrics: Mapping[str, Any]) -> Statements | None:
    """The closed models' result per point, under the headline (which states the growth
    sentences)."""
    lines: list[tuple[Status, str]] = [
        ("info", f"{label}: {st}") for label, st in model_statements(metrics)
    ]
    if not lines:
        return None
    return Statements("results", "Results", tuple(lines), lead=True)
