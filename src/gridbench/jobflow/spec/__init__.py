"""Experiment specs: the model (the load models' union), YAML loading with precise errors,
and sweep planning. The blocks below the load models are in :mod:`gridbench.jobflow.specbase`."""

from __future__ import annotations

from gridbench.jobflow.spec.load import load_spec, load_spec_text
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.jobflow.spec.plan import Plan, PlannedTrial, make_plan

__all__ = ["ExperimentSpec", "Plan", "PlannedTrial", "load_spec", "load_spec_text", "make_plan"]
