"""Growth curves: how a measured quantity grows with a swept parameter (METHODS 1.8).

The seeds fitted these by hand: XtreemOS AEM found job submission time growing as
0.0062·x² s in the number of processes x. :func:`fit_growth` fits seven least-squares
models, each growth shape with and without an intercept:

    constant      y = a
    linear        y = b·x            y = a + b·x
    nlogn         y = b·x·ln x       y = a + b·x·ln x      (x ≥ 0 only; 0·ln 0 = 0)
    quadratic     y = b·x²           y = a + b·x²

and chooses by AIC, ``n·ln(RSS/n) + 2k`` (k = fitted coefficients), with a parsimony
rule: of the models whose AIC is within ``DELTA_AIC`` (2) of the best, the simplest wins,
fewer coefficients first and then the slower growth shape. RSS is floored at a tiny
fraction of Σy² so exact fits compare as equal instead of as −∞.

Every family uses it: job flow over swept parameters (analysis/growth.py ``sweep_growth``),
messaging over client counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
DELTA_AIC = 2.0
MIN_POINTS = 3
_RSS_FLOOR = 1e-12

#: Growth shapes, slowest first (the parsimony order among equal coefficient counts).
SHAPES = ("constant", "linear", "nlogn", "quadratic")
_TERM = {"linear": "x", "nlogn": "x·ln x", "quadratic": "x²"}
_VERB = {"linear": "linearly", "nlogn": "as x·ln x", "quadratic": "quadratically"}


def _xlogx(x: F64) -> F64:
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, x * np.log(safe), 0.0)


_BASIS: dict[str, Callable[[F64], F64]] = {
    "linear": lambda x: x,
    "nlogn": _xlogx,
    "quadratic": lambda x: x * x,
}


@dataclass(frozen=True, slots=True)
class _Candidate:
    shape: str
    intercept: bool

    @property
    def k(self) -> int:
        return 1 if self.shape == "constant" else 1 + int(self.intercept)

    @property
    def form(self) -> str:
        if self.shape == "constant":
            return "a"
        term = f"b·{_TERM[self.shape]}"
        return f"a + {term}" if self.intercept else term

    def design(self, x: F64) -> F64:
        cols = [np.ones_like(x)] if self.shape == "constant" or self.intercept else []
        if self.shape != "constant":
            cols.append(_BASIS[self.shape](x))
        return np.column_stack(cols)


CANDIDATES: tuple[_Candidate, ...] = (
    _Candidate("constant", True),
    *(_Candidate(s, False) for s in SHAPES[1:]),
    *(_Candidate(s, True) for s in SHAPES[1:]),
)


def _coef(c: float) -> str:
    # 3 significant digits, whole numbers above 100 (as report text prints figures)
    if abs(c) >= 100:
        return f"{c:,.0f}"
    return f"{c:.3g}"


def formula(shape: str, a: float, b: float, *, intercept: bool = True, var: str = "x") -> str:
    """'0.0062·x²', '0.12 + 0.0034·x', '0.557' (the fitted curve as text)."""
    if shape == "constant":
        return _coef(a)
    term = f"{_coef(abs(b))}·{_TERM[shape].replace('x', var)}"
    if not intercept:
        return f"−{term}" if b < 0 else term
    return f"{_coef(a)} {'−' if b < 0 else '+'} {term}"


def statement(
    shape: str,
    a: float,
    b: float,
    quantity: str,
    unit: str,
    *,
    intercept: bool = True,
    var: str = "x",
) -> str:
    """'submission time grows quadratically: 0.0062·x² s'."""
    curve = formula(shape, a, b, intercept=intercept, var=var)
    if shape == "constant":
        return f"{quantity} is constant: {curve} {unit}".rstrip()
    verb = "falls" if b < 0 else "grows"
    return f"{quantity} {verb} {_VERB[shape]}: {curve} {unit}".rstrip()


def fit_growth(
    x: Sequence[float] | F64,
    y: Sequence[float] | F64,
    *,
    quantity: str = "y",
    unit: str = "",
    var: str = "x",
) -> dict[str, Any] | None:
    """The chosen growth model of y against x, or ``None`` with fewer than 3 distinct x.

    Returns ``{model, form, intercept, coefficients: {a, b}, r2, aic, n, statement,
    candidates: [{model, form, coefficients, rss, aic, r2}]}``; ``a`` is 0 for a curve
    through the origin and ``b`` is 0 for a constant.
    """
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[ok], ya[ok]
    n = int(xa.size)
    if n < MIN_POINTS or np.unique(xa).size < MIN_POINTS:
        return None
    tss = float(np.sum((ya - ya.mean()) ** 2))
    floor = _RSS_FLOOR * max(float(np.dot(ya, ya)), 1e-300)
    cands: list[dict[str, Any]] = []
    for c in CANDIDATES:
        if c.shape == "nlogn" and bool((xa < 0).any()):
            continue
        design = c.design(xa)
        beta, *_ = np.linalg.lstsq(design, ya, rcond=None)
        rss = float(np.sum((ya - design @ beta) ** 2))
        if c.shape == "constant":
            a, b = float(beta[0]), 0.0
        elif c.intercept:
            a, b = float(beta[0]), float(beta[1])
        else:
            a, b = 0.0, float(beta[0])
        aic = n * math.log(max(rss, floor) / n) + 2 * c.k
        r2 = 1.0 - rss / tss if tss > floor else (1.0 if rss <= floor else None)
        cands.append(
            {
                "model": c.shape,
                "form": c.form,
                "intercept": c.shape == "constant" or c.intercept,
                "coefficients": {"a": a, "b": b},
                "k": c.k,
                "rss": rss,
                "aic": aic,
                "r2": r2,
            }
        )
    best = min(cd["aic"] for cd in cands)
    # Candidates are listed simplest first: the first one close enough to the best wins.
    chosen = next(cd for cd in cands if cd["aic"] <= best + DELTA_AIC)
    a, b = chosen["coefficients"]["a"], chosen["coefficients"]["b"]
    return {
        "model": chosen["model"],
        "form": chosen["form"],
        "intercept": chosen["intercept"],
        "coefficients": {"a": a, "b": b},
        "r2": chosen["r2"],
        "aic": chosen["aic"],
        "n": n,
        "statement": statement(
            chosen["model"], a, b, quantity, unit, intercept=chosen["intercept"], var=var
        ),
        "candidates": cands,
    }


# --- experiment level ---------------------------------------------------------------------
