"""Experiment specs: models, YAML loading with precise errors, and sweep planning."""

from gridbench.spec.load import load_spec, load_spec_text
from gridbench.spec.model import ExperimentSpec
from gridbench.spec.plan import Plan, PlannedTrial, make_plan

__all__ = ["ExperimentSpec", "Plan", "PlannedTrial", "load_spec", "load_spec_text", "make_plan"]
