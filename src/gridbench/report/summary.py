"""The words of a report: the headline and the IEEE-829-flavoured evaluation summary.

Pure functions from metrics (and the caller's spec summary) to plain strings, shared by
the terminal and HTML renderers, which do their own escaping.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gridbench.report.fmt import fmt_number, fmt_rate
from gridbench.report.model import (
    all_trials,
    as_dict,
    as_list,
    chain_view,
    num,
    points,
    rate_label,
    throughput_stages,
)
from gridbench.report.tables import threshold_rows


@dataclass(frozen=True, slots=True)
class Headline:
    """What a reader must see first: the bottleneck, the knee and the verdicts."""

    experiment: str
    bottleneck_stage: str | None
    bottleneck_label: str | None
    bottleneck_segment: str | None
    bottleneck_from_rate: float | None
    bottleneck_statement: str
    bottleneck_evidence: str
    knee_statement: str
    highest_sustained_rate: float | None
    first_failing_rate: float | None
    capacity: float | None
    capacity_ci95: tuple[float, float] | None
    limited_by: str | None
    valid: bool
    invalid_trials: tuple[str, ...]
    validity_reasons: tuple[str, ...]
    thresholds_passed: int
    thresholds_failed: int

    #: closed-loop models have no offered rate, hence no knee or bottleneck ratio
    rate_based: bool = True
    load_model: str = "open"

    def capacity_text(self) -> str:
        """'capacity 0.7/s (42/min), 95% CI 0.66–0.74/s' or a note that it is unknown."""
        if self.capacity is None:
            return "capacity not determined"
        text = f"capacity {fmt_rate(self.capacity)}"
        if self.capacity_ci95 is not None:
            lo, hi = self.capacity_ci95
            text += f", 95% CI {fmt_number(lo)}–{fmt_number(hi)}/s"
        return text

    def thresholds_text(self) -> str:
        """'thresholds: 2 passed, 1 failed' or 'no thresholds set'."""
        total = self.thresholds_passed + self.thresholds_failed
        if not total:
            return "no thresholds set"
        return f"thresholds: {self.thresholds_passed} passed, {self.thresholds_failed} failed"


def _knee_fallback(sustained: float | None, failing: float | None, by: str | None) -> str:
    if sustained is not None and failing is not None:
        return f"sustains up to {fmt_rate(sustained)}; breaks at {fmt_rate(failing)}" + (
            f" in {by}" if by else ""
        )
    if sustained is not None:
        return (
            f"sustains every tested rate up to {fmt_rate(sustained)}; "
            "the knee lies above the highest tested rate"
        )
    if failing is not None:
        return f"does not keep up even at the lowest tested rate, {fmt_rate(failing)}"
    return "no knee could be determined"


def headline(metrics: Mapping[str, Any]) -> Headline:
    """The headline of ``metrics``; falls back to composed sentences where the analysis
    left its statements empty."""
    knee, bn = as_dict(metrics.get("knee")), as_dict(metrics.get("bottleneck"))
    validity = as_dict(metrics.get("validity"))
    chain = chain_view(metrics)
    stage = bn.get("stage") if isinstance(bn.get("stage"), str) else None
    seg = bn.get("segment") if isinstance(bn.get("segment"), str) else None
    from_rate = num(bn.get("from_rate_per_s"))
    sustained = num(knee.get("highest_sustained_rate_per_s"))
    failing = num(knee.get("first_failing_rate_per_s"))
    limited = knee.get("limited_by") if isinstance(knee.get("limited_by"), str) else None
    ci = knee.get("capacity_ci95")
    ci95 = None
    if isinstance(ci, list) and len(ci) == 2:
        lo, hi = num(ci[0]), num(ci[1])
        if lo is not None and hi is not None:
            ci95 = (lo, hi)
    if stage:
        fallback_bn = f"bottleneck: {stage} ({chain.stage_label(stage)})" + (
            f" from {fmt_rate(from_rate)}" if from_rate is not None else ""
        )
    else:
        fallback_bn = "no bottleneck: every stage kept up with the offered rate"
    ths = threshold_rows(metrics)
    passed = sum(1 for t in ths if t["passed"])
    return Headline(
        experiment=str(metrics.get("experiment") or "experiment"),
        load_model=str(metrics.get("load_model") or "open"),
        rate_based=str(metrics.get("load_model") or "open") == "open",
        bottleneck_stage=stage,
        bottleneck_label=chain.stage_label(stage) if stage else None,
        bottleneck_segment=seg,
        bottleneck_from_rate=from_rate,
        bottleneck_statement=str(bn.get("statement") or fallback_bn),
        bottleneck_evidence=str(bn.get("evidence") or ""),
        knee_statement=str(knee.get("statement") or _knee_fallback(sustained, failing, limited)),
        highest_sustained_rate=sustained,
        first_failing_rate=failing,
        capacity=num(knee.get("capacity_per_s")),
        capacity_ci95=ci95,
        limited_by=limited,
        valid=bool(validity.get("valid", True)),
        invalid_trials=tuple(str(t) for t in as_list(validity.get("invalid_trials"))),
        validity_reasons=tuple(str(r) for r in as_list(validity.get("reasons"))),
        thresholds_passed=passed,
        thresholds_failed=len(ths) - passed,
    )


Status = Literal["pass", "fail", "warn", "info"]


@dataclass(slots=True)
class EvaluationSummary:
    """IEEE 829 in four questions: what was tested, how it was configured, what passed or
    failed, and what is left open (METHODS section 5)."""

    tested: list[tuple[str, str]] = field(default_factory=list)
    configured: list[tuple[str, str]] = field(default_factory=list)
    outcome: list[tuple[Status, str]] = field(default_factory=list)
    left_open: list[str] = field(default_factory=list)


#: spec_summary keys that list things the reader should know are not covered.
OPEN_KEYS = ("not_tested", "left_open", "open")


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and all(
        isinstance(v, str | int | float | bool) or v is None for v in value
    ):
        out.append((prefix, ", ".join("null" if v is None else str(v) for v in value)))
    elif isinstance(value, list):
        out.append((prefix, json.dumps(value, sort_keys=True, default=str)))
    else:
        out.append((prefix, "null" if value is None else str(value)))


def spec_pairs(spec_summary: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The spec summary flattened to ('a.b', 'value') pairs, open-item keys left out."""
    out: list[tuple[str, str]] = []
    for k, v in (spec_summary or {}).items():
        if k not in OPEN_KEYS:
            _flatten(str(k), v, out)
    return out


def downsampled_trials(series: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """Trial ids whose chart series were down-sampled by the analysis."""
    return sorted(tid for tid, s in (series or {}).items() if as_dict(s).get("downsampled"))


def evaluation_summary(
    metrics: Mapping[str, Any], spec_summary: Mapping[str, Any] | None = None
) -> EvaluationSummary:
    """Answer the four IEEE-829 questions from the metrics and the caller's spec summary."""
    out = EvaluationSummary()
    chain = chain_view(metrics)
    pts = points(metrics)
    pairs = all_trials(metrics)
    hl = headline(metrics)

    out.tested.append(("experiment", hl.experiment))
    if chain.stages:
        out.tested.append(("stage chain", " → ".join(chain.stages)))
    if chain.components:
        out.tested.append(("component segments", ", ".join(chain.components)))
    out.tested.append(("load model", str(metrics.get("load_model") or "n/a")))
    out.tested.append(("offered rates", ", ".join(rate_label(p) for p in pts) or "none"))
    per_point = sorted({len(as_list(p.get("trials"))) for p in pts})
    out.tested.append(
        ("trials per point", ", ".join(str(n) for n in per_point) if per_point else "0")
    )
    planned = sum(num(as_dict(t.get("jobs")).get("planned")) or 0.0 for _, t in pairs)
    out.tested.append(("jobs planned", str(int(planned))))

    out.configured = spec_pairs(spec_summary)
    if spec_summary is None:
        out.configured.append(("spec", "no spec summary was passed to the report"))

    out.outcome.append(("info", hl.knee_statement))
    out.outcome.append(("info", hl.bottleneck_statement))
    for th in threshold_rows(metrics):
        actual = "not measured" if th["actual"] is None else fmt_number(th["actual"])
        text = f"{th['metric']} {th['op']} {fmt_number(th['value'] or 0.0)}: actual {actual}"
        if th["where"]:
            text += f" ({th['where']})"
        out.outcome.append(("pass" if th["passed"] else "fail", text))
    n_valid = sum(1 for _, t in pairs if t.get("valid", True))
    out.outcome.append(
        (
            "pass" if n_valid == len(pairs) else "warn",
            f"{n_valid} of {len(pairs)} trials valid",
        )
    )

    out.left_open.extend(_open_items(metrics, hl))
    for k in OPEN_KEYS:
        out.left_open.extend(str(v) for v in as_list(as_dict(spec_summary or {}).get(k)))
    if not out.left_open:
        out.left_open.append("nothing flagged by the analysis")
    return out


def _open_items(metrics: Mapping[str, Any], hl: Headline) -> list[str]:
    """Everything the analysis could not settle, as sentences."""
    items: list[str] = []
    pts = points(metrics)
    rates = [r for p in pts if (r := num(p.get("offered_rate_per_s"))) is not None]
    for p, t in all_trials(metrics):
        tid = str(t.get("trial_id"))
        v = as_dict(t.get("validity"))
        if not t.get("valid", True):
            reasons = "; ".join(str(r) for r in as_list(v.get("reasons"))) or "no reason given"
            items.append(f"trial {tid} ({rate_label(p)}) is invalid: {reasons}")
        if t.get("status") not in (None, "complete"):
            items.append(f"trial {tid} did not complete (status {t.get('status')})")
        if v.get("client_bound"):
            items.append(f"trial {tid}: the client was CPU-bound; its numbers measure the client")
        coarse = [str(c) for c in as_list(v.get("coarse_precision"))]
        if coarse:
            items.append(f"trial {tid}: timestamps too coarse to resolve {', '.join(coarse)}")
    for p in pts:
        for o in as_list(as_dict(p.get("summary")).get("outliers")):
            d = as_dict(o)
            verb = "kept" if d.get("kept") else "dropped"
            items.append(
                f"outlier {d.get('trial_id')} ({rate_label(p)}, {d.get('metric')}) {verb}: "
                f"{d.get('reason', '')}"
            )
    if hl.highest_sustained_rate is not None and rates and hl.first_failing_rate is None:
        items.append(f"no tested rate broke the system; its knee lies above {fmt_rate(max(rates))}")
    if hl.first_failing_rate is not None and rates and hl.highest_sustained_rate is None:
        items.append(
            f"the system fails already at {fmt_rate(min(rates))}; lower rates were not tested"
        )
    for th in threshold_rows(metrics):
        if th["actual"] is None:
            items.append(f"threshold on {th['metric']} could not be evaluated (no data)")
    chain = chain_view(metrics)
    measured = set(throughput_stages(metrics))
    missing = [s for s in chain.stages if s not in measured]
    if measured and missing:
        items.append(f"no throughput measured for stage(s) {', '.join(missing)}")
    return items
