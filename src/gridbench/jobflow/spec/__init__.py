"""Experiment specs: the model (the load models' union), YAML loading with precise errors,
and sweep planning. The blocks below the load models are in :mod:`gridbench.jobflow.specbase`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gridbench.jobflow.spec.load import load_spec, load_spec_text
    from gridbench.jobflow.spec.model import ExperimentSpec
    from gridbench.jobflow.spec.plan import Plan, PlannedTrial, make_plan

__all__ = ["ExperimentSpec", "Plan", "PlannedTrial", "load_spec", "load_spec_text", "make_plan"]

_WHERE = {
    "load_spec": "gridbench.jobflow.spec.load",
    "load_spec_text": "gridbench.jobflow.spec.load",
    "ExperimentSpec": "gridbench.jobflow.spec.model",
    "Plan": "gridbench.jobflow.spec.plan",
    "PlannedTrial": "gridbench.jobflow.spec.plan",
    "make_plan": "gridbench.jobflow.spec.plan",
}


def __getattr__(name: str) -> Any:
    # Lazy: importing one of these modules (the spec model, say) need not import the others
    # (the loader's YAML machinery, the planner).
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
