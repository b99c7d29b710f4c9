"""The probe load model (single-operation overhead and bursts): its rows and sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.fmt import fmt_s
from gridbench.jobflow.report.build import Spec, level_style, spec_table, trial_cell
from gridbench.jobflow.report.model import (
    Row,
    as_dict,
    model_of,
    model_trials,
    num,
    nums,
    point_head,
    points,
    trial_head,
    trials,
)
from gridbench.sections import Shown, Table


def _probe_cols(single: Mapping[str, Any], below: Mapping[str, Any]) -> Row:
    return {
        **nums(single, {"n": "n", "errors": "errors"}),
        **nums(single, {f"{k}_s": k for k in ("mean", "std", "min", "max", "ci95")}),
        "result": str(single.get("statement") or ""),
        "below_stage": str(below.get("stage") or ""),
        **nums(below, {"below_n": "n", "below_mean_s": "mean", "below_ci95_s": "ci95"}),
        "below": str(below.get("statement") or ""),
    }


def probe_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Single-operation overhead: per trial (and per point, pooled over its valid trials,
    when it has several) n, mean and 95% CI in the seed's form '557±124 ms (α=0.05)', and
    the part spent below the client ('234±43 ms of the 557')."""
    rows: list[Row] = []
    for p in points(metrics):
        ts = model_trials(p, "probe")
        for t, m in ts:
            rows.append(
                {
                    **trial_head(p, t),
                    "operation": str(m.get("operation") or ""),
                    "label": str(m.get("label") or ""),
                    **_probe_cols(as_dict(m.get("single")), as_dict(m.get("below"))),
                }
            )
        summ = model_of(as_dict(p.get("summary")), "probe")
        if len(ts) > 1 and summ:
            pool = as_dict(summ.get("pooled"))
            single = dict(as_dict(pool.get("single")))
            single["errors"] = sum(
                num(as_dict(m.get("single")).get("errors")) or 0.0
                for t, m in ts
                if t.get("valid", True)
            )
            rows.append(
                {
                    **point_head(p, any(t.get("valid", True) for t, _ in ts)),
                    "operation": str(summ.get("operation") or ""),
                    "label": str(summ.get("label") or ""),
                    **_probe_cols(single, as_dict(pool.get("below"))),
                }
            )
    return rows


def probe_burst_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """Bursts per trial: thread count, requests, total time, time per request (total ÷
    requests) and the mean of the individual requests; per point the mean burst time with
    its 95% CI across trials ('47±10 s (α=0.05)')."""
    rows: list[Row] = []
    for p in points(metrics):
        for t in trials(p):
            for key, b in as_dict(model_of(t, "probe").get("bursts")).items():
                d = as_dict(b)
                rows.append(
                    {
                        **trial_head(p, t),
                        "burst": str(key),
                        "threads": num(d.get("threads")),
                        "requests": num(d.get("requests")),
                        "total_s": num(d.get("total_s")),
                        "total_ci95_s": None,
                        "per_request_s": num(d.get("per_request_s")),
                        "request_mean_s": num(as_dict(d.get("request")).get("mean")),
                        "errors": num(d.get("errors")),
                        "result": "",
                    }
                )
        summ = model_of(as_dict(p.get("summary")), "probe")
        if summ.get("trials", 0) and len(trials(p)) > 1:
            for key, b in as_dict(summ.get("bursts")).items():
                d = as_dict(b)
                total = as_dict(d.get("total_s"))
                rows.append(
                    {
                        **point_head(p, True),
                        "burst": str(key),
                        "threads": num(as_dict(d.get("threads")).get("mean")),
                        "requests": num(as_dict(d.get("requests")).get("mean")),
                        "total_s": num(total.get("mean")),
                        "total_ci95_s": num(total.get("ci95")),
                        "per_request_s": num(as_dict(d.get("per_request_s")).get("mean")),
                        "request_mean_s": num(
                            as_dict(as_dict(d.get("request")).get("mean")).get("mean")
                        ),
                        "errors": num(as_dict(d.get("errors")).get("mean")),
                        "result": str(d.get("statement") or ""),
                    }
                )
    return rows


_PROBE = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("operation", lambda r: r["label"] or r["operation"]),
    Spec("n", "n", True),
    Spec("errors", "errors", True),
    Spec("time (α=0.05)", lambda r: r["result"] or "–"),
    Spec("below the client", lambda r: f"{r['below']} ({r['below_stage']})" if r["below"] else "–"),
)

_BURSTS = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("threads", "threads", True),
    Spec("requests", "requests", True),
    Spec("total (s)", lambda r: Shown(r["total_s"], r["result"] or fmt_s(r["total_s"])), True),
    Spec("per request (s)", "per_request_s", True, fmt_s),
    Spec("errors", "errors", True),
)


def probe_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """Single operations in the seed's form ('557±124 ms (α=0.05)'), then the bursts."""
    probe = spec_table(
        "probe",
        "Probe: single-operation overhead",
        probe_rows(metrics),
        _PROBE,
        note="Single operations spaced by a gap: mean ± 95% CI half-width (Student t); "
        "below the client = from the server's submit stage to the call's return.",
        style=level_style,
    )
    if probe is None:
        return []
    bursts = spec_table(
        "probe-bursts",
        "Probe: bursts",
        probe_burst_rows(metrics),
        _BURSTS,
        note="Bursts: the time for all requests with k client threads, and per request.",
        style=level_style,
    )
    return [probe] if bursts is None else [probe, bursts]
