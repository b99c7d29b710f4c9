"""Experiment specs: models, YAML loading with precise errors, and sweep planning."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gridbench.spec.load import load_spec, load_spec_text
    from gridbench.spec.model import ExperimentSpec
    from gridbench.spec.plan import Plan, PlannedTrial, make_plan

__all__ = ["ExperimentSpec", "Plan", "PlannedTrial", "load_spec", "load_spec_text", "make_plan"]

_WHERE = {
    "load_spec": "gridbench.spec.load",
    "load_spec_text": "gridbench.spec.load",
    "ExperimentSpec": "gridbench.spec.model",
    "Plan": "gridbench.spec.plan",
    "PlannedTrial": "gridbench.spec.plan",
    "make_plan": "gridbench.spec.plan",
}


def __getattr__(name: str) -> Any:
    # Lazy: the load models import gridbench.spec.units, and the spec model imports the
    # load models' registry; eager imports here would make that a cycle.
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
