"""The words of a job-flow report: the headline (each finding stated once) and the
IEEE-829 evaluation summary, as :mod:`gridbench.sections` data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gridbench.fmt import fmt_number, fmt_rate
from gridbench.jobflow import loads
from gridbench.jobflow.analysis.left_behind import sentence
from gridbench.jobflow.report.growth import growth_statements
from gridbench.jobflow.report.model import (
    all_trials,
    as_dict,
    as_list,
    chain_view,
    num,
    points,
    rate_label,
    throughput_stages,
)
from gridbench.jobflow.report.rows import threshold_rows
from gridbench.sections import EvaluationSummary, Finding, Headline, Status, Table


@dataclass(frozen=True, slots=True)
class Facts:
    """What the headline and the summary are made of, read once from the metrics."""

    experiment: str
    load_model: str
    rate_based: bool
    bottleneck: str  # the sentence, without its evidence
    evidence: str
    knee: str
    highest_sustained_rate: float | None
    first_failing_rate: float | None
    capacity: float | None
    capacity_ci95: tuple[float, float] | None
    valid: bool
    invalid_trials: tuple[str, ...]
    validity_reasons: tuple[str, ...]
    thresholds_passed: int
    thresholds_failed: int

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


def _rate_based(load_model: str) -> bool:
    """The registered model offers a rate (an unknown model, e.g. foreign results: no)."""
    model = loads.find(load_model)
    return model is not None and model.rate_based


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


def facts(metrics: Mapping[str, Any]) -> Facts:
    """The headline facts of ``metrics``; composed sentences where the analysis left its
    statements empty."""
    knee, bn = as_dict(metrics.get("knee")), as_dict(metrics.get("bottleneck"))
    validity = as_dict(metrics.get("validity"))
    chain = chain_view(metrics)
    stage = bn.get("stage") if isinstance(bn.get("stage"), str) else None
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
    evidence = str(bn.get("evidence") or "")
    sentence = str(bn.get("statement") or fallback_bn)
    # The analysis ends its sentence with the evidence: state it once, as the evidence.
    if evidence and sentence.endswith(evidence) and sentence != evidence:
        sentence = sentence[: -len(evidence)].rstrip()
    ths = threshold_rows(metrics)
    passed = sum(1 for t in ths if t["passed"])
    load_model = str(metrics.get("load_model") or "open")
    return Facts(
        experiment=str(metrics.get("experiment") or "experiment"),
        load_model=load_model,
        rate_based=_rate_based(load_model),
        bottleneck=sentence,
        evidence=evidence,
        knee=str(knee.get("statement") or _knee_fallback(sustained, failing, limited)),
        highest_sustained_rate=sustained,
        first_failing_rate=failing,
        capacity=num(knee.get("capacity_per_s")),
        capacity_ci95=ci95,
        valid=bool(validity.get("valid", True)),
        invalid_trials=tuple(str(t) for t in as_list(validity.get("invalid_trials"))),
        validity_reasons=tuple(str(r) for r in as_list(validity.get("reasons"))),
        thresholds_passed=passed,
        thresholds_failed=len(ths) - passed,
    )


def _cycles_evidence(cycles: Mapping[str, Any]) -> str:
    return (
        f"{cycles.get('trials')} of {cycles.get('of_trials')} trial(s) show passes at "
        f"{cycles.get('stage')}; up to {cycles.get('max_jobs_per_pass')} jobs a pass; a job "
        f"waited {num(cycles.get('pass_wait_mean_s')) or 0:.3g} s for its pass on average"
    )


def headline(metrics: Mapping[str, Any]) -> Headline:
    """The bottleneck (with its evidence), the knee and the capacity, then validity and
    thresholds: each stated once. Closed loops have no offered rate, hence no knee."""
    f = facts(metrics)
    out: list[Finding] = []
    if f.rate_based:
        out.append(Finding("info", f.bottleneck, f.evidence))
        out.append(Finding("info", f.knee))
        if "capacity" not in f.knee:  # the analysis's knee sentence states it already
            out.append(
                Finding(
                    "info",
                    f"Highest sustained rate: {fmt_rate(f.highest_sustained_rate)}; "
                    f"{f.capacity_text()}",
                )
            )
    else:
        out.append(
            Finding(
                "info",
                f"Load model {f.load_model} (closed loop): no offered rate, so no knee or "
                "bottleneck ratio; see Results.",
            )
        )
    cycles = as_dict(metrics.get("cycles"))
    if cycles.get("dominant"):  # waiting for a scheduler's passes leads the latency
        out.append(Finding("info", str(cycles.get("statement")), _cycles_evidence(cycles)))
    # growth against a swept size (METHODS 1.8, the AEM story): a finding, stated here only
    out += [Finding("info", f"growth: {st}") for st in growth_statements(metrics)]
    if f.invalid_trials:
        out.append(
            Finding(
                "warn",
                f"{len(f.invalid_trials)} invalid trial(s): {', '.join(f.invalid_trials)}",
                "; ".join(f.validity_reasons),
                problem=True,  # ranked before every warning (issue 41)
            )
        )
    by_hand = [as_dict(x) for x in as_list(metrics.get("excluded_by_hand"))]
    if by_hand:  # gridbench exclude: left out of every figure, said with its reason
        out.append(
            Finding(
                "warn",
                f"{len(by_hand)} trial(s) excluded by hand: "
                + ", ".join(str(x.get("trial")) for x in by_hand),
                "; ".join(f"{x.get('trial')}: {x.get('reason')}" for x in by_hand),
            )
        )
    if not f.valid:
        out.append(Finding("warn", "The experiment as a whole is not valid.", problem=True))
    left = sentence(metrics.get("left_behind"))
    if left is not None:  # an agent lost or jobs never ended: cleanup is needed
        out.append(Finding("warn", *left))
    total = f.thresholds_passed + f.thresholds_failed
    th_status: Status = "fail" if f.thresholds_failed else ("pass" if total else "info")
    out.append(Finding(th_status, f.thresholds_text()))
    return Headline(f.experiment, tuple(out))


def downsampled_trials(series: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """Trial ids whose chart series were down-sampled by the analysis."""
    return sorted(tid for tid, s in (series or {}).items() if as_dict(s).get("downsampled"))


def evaluation_summary(
    metrics: Mapping[str, Any],
    *,
    spec_yaml: str = "",
    plan: Table | None = None,
    not_tested: Sequence[str] = (),
    experiment: Mapping[str, Any] | None = None,
) -> EvaluationSummary:
    """Answer the four IEEE-829 questions: what was tested (from the metrics and the run's
    experiment.json), how it was configured (the spec as YAML and its declared plan), what
    passed or failed (thresholds and trial validity: the headline's findings are not
    repeated) and what is left open."""
    chain = chain_view(metrics)
    pts = points(metrics)
    pairs = all_trials(metrics)
    f = facts(metrics)
    exp = experiment or {}

    tested: list[tuple[str, str]] = [("experiment", f.experiment)]
    for key, label in (("id", "run"), ("status", "run status"), ("created", "created")):
        if isinstance(exp.get(key), str) and exp[key]:
            tested.append((label, exp[key]))
    if chain.stages:
        tested.append(("stage chain", " → ".join(chain.stages)))
    if chain.components:
        tested.append(("component segments", ", ".join(chain.components)))
    tested.append(("load model", str(metrics.get("load_model") or "n/a")))
    tested.append(("offered rates", ", ".join(rate_label(p) for p in pts) or "none"))
    per_point = sorted({len(as_list(p.get("trials"))) for p in pts})
    tested.append(("trials per point", ", ".join(str(n) for n in per_point) or "0"))
    planned = sum(num(as_dict(t.get("jobs")).get("planned")) or 0.0 for _, t in pairs)
    tested.append(("jobs planned", str(int(planned))))

    outcome: list[Finding] = []
    for th in threshold_rows(metrics):
        actual = "not measured" if th["actual"] is None else fmt_number(th["actual"])
        text = f"{th['metric']} {th['op']} {fmt_number(th['value'] or 0.0)}: actual {actual}"
        if th["where"]:
            text += f" ({th['where']})"
        outcome.append(Finding("pass" if th["passed"] else "fail", text))
    n_valid = sum(1 for _, t in pairs if t.get("valid", True))
    outcome.append(
        Finding(
            "pass" if n_valid == len(pairs) else "warn", f"{n_valid} of {len(pairs)} trials valid"
        )
    )

    left_open = _open_items(metrics, f)
    if not left_open and not not_tested:
        left_open.append("nothing flagged by the analysis")
    return EvaluationSummary(
        tested=tuple(tested),
        spec_yaml=spec_yaml,
        plan=plan,
        outcome=tuple(outcome),
        left_open=tuple(left_open),
        not_tested=tuple(not_tested),
    )


def _open_items(metrics: Mapping[str, Any], hl: Facts) -> list[str]:
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
