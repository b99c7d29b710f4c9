"""What the report of a predicted run says first: that it is a prediction, by which
model, and on which measured runs the model was checked and how far off it was
(experiment.json's ``predicted``, written by ``gridbench model predict|check``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.sections import Finding


def _pct(v: Any) -> str:
    return f"{float(v):.1%}" if isinstance(v, int | float) and not isinstance(v, bool) else "n/a"


def _check_text(c: Mapping[str, Any]) -> str:
    raw = c.get("errors")
    e: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    stage = e.get("breaking stage")
    same = (
        "the same breaking stage"
        if stage in (None, 0.0)
        or (isinstance(stage, str) and stage.split(" vs ")[0] == stage.split(" vs ")[-1])
        else f"breaking stage {stage}"
    )
    return (
        f"run {str(c.get('run'))[:120]}: capacity off {_pct(e.get('capacity'))}, mean latency "
        f"below the knee off {_pct(e.get('latency_below_knee_max'))} at most, {same}"
    )


def predicted_findings(experiment: Mapping[str, Any] | None) -> tuple[Finding, ...]:
    """The findings that mark a predicted run; none for a measured one."""
    p: Any = (experiment or {}).get("predicted")
    if not isinstance(p, Mapping):
        return ()
    name = str(p.get("model_name") or p.get("model") or "a model")[:120]
    raw = p.get("fitted_from")
    fitted: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    out = [
        Finding(
            "info",
            f"Predicted, not measured: the model {name}"
            + (f", fitted on run {str(fitted.get('run'))[:120]}" if fitted.get("run") else "")
            + f" ({p.get('engine', 'simpy')} discrete-event engine).",
        )
    ]
    checks = [c for c in p.get("checks") or [] if isinstance(c, Mapping)]
    for c in checks:
        out.append(
            Finding(
                "pass" if c.get("within") else "warn", "Model checked on " + _check_text(c) + "."
            )
        )
    if not checks:
        out.append(
            Finding(
                "warn",
                "The model was never checked against a measured run "
                "(gridbench model check MODEL RUN).",
            )
        )
    against = p.get("checking")  # a check's prediction has the measured run's points
    me = (experiment or {}).get("id")
    if isinstance(against, str) and isinstance(me, str):
        out.append(
            Finding(
                "info",
                f"Overlay it on the measured run: gridbench compare {against[:120]} {me[:120]} "
                f"(dashboard: /compare?ids={against[:120]}&ids={me[:120]}).",
            )
        )
    if p.get("checking"):
        out.append(
            Finding(
                "info",
                f"This prediction re-runs the measured run {str(p['checking'])[:120]} "
                "to check the model.",
            )
        )
    return tuple(out)
