"""Job-flow spec text for the new-experiment page: the starting spec, parsing for the
form (secrets redacted), validating and planning a posted spec, YAML in the spec's order."""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML

from gridbench.errors import GridbenchError, SpecError
from gridbench.family.dashboard import error_dict
from gridbench.jobflow.experiment.check import check_config
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.jobflow.spec.plan import Plan, make_plan
from gridbench.jobflow.specbase.units import format_rate
from gridbench.jobflow.web.literal_secrets import redact, refuse_secrets
from gridbench.specload import MAX_SPEC_BYTES, parse_yaml, plain_data
from gridbench.store.layout import json_safe

NEW_SPEC = """\
name: my-experiment
backend:
  type: reference
  options:
    preset: batched
job:
  runtime: 1s
load:
  model: open
  rate: 1/s
  pool: 16
trials: 1
trial:
  duration: 10s
timeouts:
  status_interval: 0.5s
  drain: 60s
  settle: 2s
collectors:
  - type: edgi
    reports: auto
    poll: 1s
thresholds:
  - metric: latency.overall.p99
    op: "<"
    value: 60
safety:
  max_rate: 10/s
  max_jobs: 5000
  confirm_above: 1000
"""


def plan_rows(plan: Plan) -> list[dict[str, Any]]:
    """The plan's points as the new-experiment page lists them."""
    return [
        {
            "index": p.index,
            "values": ", ".join(f"{k}={v}" for k, v in p.values.items()) or "-",
            "peak": format_rate(p.peak_rate_per_s) if p.peak_rate_per_s is not None else "–",
            "jobs": p.jobs_per_trial if p.jobs_per_trial is not None else "closed loop",
            "seconds": round(p.seconds_per_trial),
        }
        for p in plan.points
    ]


def plan_view(plan: Plan) -> dict[str, Any]:
    """The plan's summary for the page."""
    return {
        "rows": plan_rows(plan),
        "trials": len(plan.trials),
        "per_point": plan.spec.trials,
        "total_jobs": plan.total_jobs,
        "minutes": round(plan.estimated_seconds / 60, 1),
        "confirm_above": plan.spec.safety.confirm_above,
    }


def spec_yaml(data: dict[str, Any]) -> str:
    """YAML of spec data with the top-level keys in the spec's order (name first) and
    nested keys as given (the form must not reshuffle what the user wrote)."""
    order = list(ExperimentSpec.model_fields)
    ordered = {k: data[k] for k in order if k in data}
    ordered.update((k, v) for k, v in data.items() if k not in ordered)
    y = YAML(typ="rt")
    y.default_flow_style = False
    buf = io.StringIO()
    y.dump(ordered, buf)
    return buf.getvalue()


def parse_for_form(text: str) -> dict[str, Any]:
    """Spec data for the form (secrets redacted), and the validation error if any."""
    try:
        check_size(text)
        data = plain_data(parse_yaml(text, "spec"))
    except GridbenchError as exc:
        return {"data": None, "error": error_dict(exc)}
    error = None
    try:
        load_spec_text(text, "spec")
    except GridbenchError as exc:
        error = error_dict(exc)
    return {"data": json_safe(redact(data)), "error": error}


def parse_spec(text: str) -> tuple[Plan, dict[str, Any]]:
    """Validate a posted spec, refuse literal secrets, plan it and check its backend config."""
    check_size(text)
    spec, data = load_spec_text(text, "spec")
    refuse_secrets(data, "spec")  # the whole spec: job argv, collectors' URLs...
    plan = make_plan(spec, data, "spec")
    check_config([p.spec for p in plan.points])
    return plan, data


def check_size(text: str) -> None:
    """SpecError when the text is over the spec size limit."""
    if len(text.encode("utf-8")) > MAX_SPEC_BYTES:
        raise SpecError("the spec is larger than 1 MiB", where="spec", fix="a spec is short")
