"""Pass/fail thresholds for every benchmark family: one model, one path grammar, one evaluator.

A threshold is ``{"metric": PATH, "op": "<"|"<="|">"|">="|"==", "value": number,
"point": index | "all" | "any"}`` (``op`` defaults to "<", ``point`` to "all"). ``PATH``
is a dotted path into a metrics document (:func:`gridbench.paths.resolve`: keys of
objects, list items by integer index).

The family says where a path is read through *scopes*: a mapping from the path's first
part to a :data:`Scope` (key :data:`DEFAULT_SCOPE` for every other path). A scope turns
the metric and ``point`` into a :class:`Selection`: the path left to read and *groups*
of documents. Every document of a group must meet the limit and the worst one speaks for
the group (job flow: a point's valid trials); every group must pass, or with
``Selection.any`` at least one (job flow's ``point: any``). Job flow's scopes are in
:mod:`gridbench.jobflow.analysis.thresholds`, io's in :mod:`gridbench.io.analysis`.

Result records (one per threshold, in order) are plain data for metrics.json::

    {"metric", "op", "value", "point", "passed", "actual", "where", "reason"}

``actual`` is the number seen (the worst one), ``where`` names the document it came from
and ``reason`` says why a threshold failed. Booleans compare as 1/0. A path that names
nothing, a value that is not a number, or an unknown operator makes the threshold fail
with a reason; evaluation never raises.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gridbench.paths import PathError, number, resolve

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
Op = Literal["<", "<=", ">", ">=", "=="]
#: The key of the scope that reads every path no other scope claims.
DEFAULT_SCOPE = "*"


class ThresholdSpec(BaseModel):
    """A pass/fail limit on one metric path; a failed threshold makes the run exit 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(description="a dotted path into the family's metrics document")
    op: Op = "<"
    value: float = Field(allow_inf_nan=False, description="the limit (a finite number)")
    point: int | Literal["all", "any"] = Field(
        default="all",
        description="job flow: the point index, 'all' or 'any'; families without points ignore it",
    )


Resolver = Callable[[Any, str], Any]


@dataclass(frozen=True, slots=True)
class Doc:
    """A document a path is read from, named for ``where`` in the result."""

    obj: Any
    where: str
    #: how the path is read; a family may add its own rules (job flow: failure counts)
    resolve: Resolver = resolve


@dataclass(frozen=True, slots=True)
class Group:
    """Documents that must all meet the limit; the worst of them speaks for the group."""

    where: str
    docs: Sequence[Doc]
    #: why the group fails when it holds no document
    empty_reason: str = "there is nothing to check"


@dataclass(frozen=True, slots=True)
class Selection:
    """What a scope found: the path to read in each document, and the groups."""

    path: str
    groups: Sequence[Group]
    #: at least one group must pass (otherwise every group must)
    any: bool = False


#: ``(metric, point) -> Selection``, or a string saying why nothing can be selected.
Scope = Callable[[str, Any], Selection | str]


def single(doc: Any, where: str, *, strip_head: bool = False) -> Scope:
    """A scope reading the metric path (without its first part when ``strip_head``) in
    one document, whatever ``point`` says."""

    def scope(metric: str, point: Any) -> Selection:
        path = metric.partition(".")[2] if strip_head else metric
        return Selection(path, [Group(where, [Doc(doc, where)])])

    return scope


def _num(x: float) -> str:
    # three significant digits, whole above 100; as jobflow.text.num, which core cannot import
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _badness(op: str, actual: float, value: float) -> float:
    """Larger = further on the failing side, to pick the worst document or group."""
    if op in ("<", "<="):
        return actual
    if op in (">", ">="):
        return -actual
    return abs(actual - value)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one document, group or threshold before it becomes a record."""

    passed: bool
    actual: float | None
    where: str
    reason: str | None = None
    unknown: bool = False  # the path names nothing

    def badness(self, op: str, value: float) -> tuple[bool, float]:
        """Sort key: failed before passed, then further on the failing side."""
        b = float("inf") if self.actual is None else _badness(op, self.actual, value)
        return (not self.passed, b)


def check(doc: Doc, path: str, op: str, value: float) -> Outcome:
    """One document against one limit."""
    try:
        raw = doc.resolve(doc.obj, path)
    except PathError as e:
        return Outcome(False, None, doc.where, str(e), unknown=True)
    a = number(raw)
    if a is None:
        return Outcome(False, None, doc.where, f"the metric has no numeric value ({raw!r})")
    ok = OPS[op](a, value)
    return Outcome(ok, a, doc.where, None if ok else f"{_num(a)} is not {op} {_num(value)}")


def _group(g: Group, path: str, op: str, value: float) -> Outcome:
    if not g.docs:
        return Outcome(False, None, g.where, g.empty_reason)
    return max((check(d, path, op, value) for d in g.docs), key=lambda r: r.badness(op, value))


def _combine(sel: Selection, op: str, value: float) -> Outcome:
    results = [_group(g, sel.path, op, value) for g in sel.groups]
    if not results:
        return Outcome(False, None, "", "there is nothing to check")
    unknown = [x for x in results if x.unknown]
    if unknown:
        return unknown[0]
    if sel.any:
        best = min(results, key=lambda x: x.badness(op, value))
        return Outcome(any(x.passed for x in results), best.actual, best.where, best.reason)
    return max(results, key=lambda x: x.badness(op, value))


def _as_dict(t: Any) -> dict[str, Any]:
    if hasattr(t, "model_dump"):
        return dict(t.model_dump())
    return dict(t)


def evaluate_threshold(threshold: Any, scopes: Mapping[str, Scope]) -> dict[str, Any]:
    """One threshold's result record (see the module docstring); ``threshold`` is a
    :class:`ThresholdSpec` or a mapping with its fields."""
    try:
        t = _as_dict(threshold)
    except (TypeError, ValueError):
        t = {}
    metric = str(t.get("metric", ""))
    op = str(t.get("op", "<"))
    point = t.get("point", "all")
    out: dict[str, Any] = {
        "metric": metric,
        "op": op,
        "value": t.get("value"),
        "point": point,
        "actual": None,
        "passed": False,
        "where": "",
        "reason": None,
    }
    value = number(t.get("value"))
    if not metric:
        out["reason"] = "the threshold names no metric"
        return out
    if op not in OPS:
        out["reason"] = f"unknown operator {op!r}; use one of {', '.join(OPS)}"
        return out
    if value is None:
        out["reason"] = f"the threshold value {t.get('value')!r} is not a number"
        return out
    scope = scopes.get(metric.partition(".")[0]) or scopes.get(DEFAULT_SCOPE)
    if scope is None:
        known = ", ".join(f"{k}." for k in scopes if k != DEFAULT_SCOPE) or "none"
        out["reason"] = f"unknown metric path {metric!r}: paths start with one of {known}"
        return out
    sel = scope(metric, point)
    if isinstance(sel, str):
        out["reason"] = sel
        return out
    r = _combine(sel, op, value)
    if r.unknown:
        out.update(where=r.where, reason=f"unknown metric path {metric!r}: {r.reason}")
        return out
    out.update(passed=r.passed, actual=r.actual, where=r.where, reason=r.reason)
    return out


def evaluate_thresholds(
    thresholds: Sequence[Any], scopes: Mapping[str, Scope]
) -> list[dict[str, Any]]:
    """Every threshold's result record, in order."""
    return [evaluate_threshold(t, scopes) for t in thresholds]
