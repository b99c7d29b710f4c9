"""The load-model seam of job flow: what one load model (open, sustain, batch, probe) is.

A load model is one module under ``gridbench/jobflow/loads/`` holding

* its spec: a pydantic model of the ``load:`` block (a subclass of :class:`LoadBase`, with
  ``model: Literal["<name>"]``); the spec's ``load`` is the union of every registered
  model's spec, discriminated on ``model``;
* its plan contribution (jobs per trial, seconds per trial, peak offered rate);
* its runner: one coroutine taking a :class:`TrialContext`;
* its analysis: the trial's ``model`` object in metrics.json and the point's
  ``summary.model`` (closed models), plus the few per-model switches of the generic
  analysis (offered rate, users by agent, growth quantity, validity);
* a reference to its report sections.

and one registration in :data:`gridbench.jobflow.loads.LOAD_MODELS`.

The parts live below the load models, beside what uses them: the ``load:`` block's common
part in :mod:`gridbench.jobflow.specbase.load`, the protocol and the trial context beside
the runner that builds it (:mod:`gridbench.jobflow.run.load_model`). This module gathers
them, so that a load model imports its seam from one place.
"""

from __future__ import annotations

from gridbench.jobflow.run.load_model import (
    BaseLoadModel,
    LoadModel,
    PlanEstimate,
    SectionBuilder,
    TrialContext,
)
from gridbench.jobflow.run.requests import RequestMaker
from gridbench.jobflow.specbase.load import (
    DEFAULT_MODEL,
    AgentsBlock,
    LoadBase,
    Strict,
    narrow,
)

__all__ = [
    "DEFAULT_MODEL",
    "AgentsBlock",
    "BaseLoadModel",
    "LoadBase",
    "LoadModel",
    "PlanEstimate",
    "RequestMaker",
    "SectionBuilder",
    "Strict",
    "TrialContext",
    "narrow",
]
