"""The experiment spec: :class:`~gridbench.jobflow.specbase.model.ExperimentBase` with
``load`` as the union of the registered load models' specs, discriminated on ``model``.

It sits above the load models (it knows every one); code below them reads a spec as an
``ExperimentBase``, whose ``load`` is the models' common part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from gridbench.jobflow import loads as load_models
from gridbench.jobflow.specbase.model import ExperimentBase

if TYPE_CHECKING:  # code outside a load model sees the common fields only
    LoadSpec: TypeAlias = load_models.LoadBase
else:  # the registered models' specs, discriminated on ``model``
    LoadSpec = load_models.load_spec_type()


class ExperimentSpec(ExperimentBase):
    """A whole experiment: system under test, workload, sweep, trials and checks."""

    load: LoadSpec

    def _check_load(self) -> None:
        load_models.get(self.load.model).check_spec(self)  # the load model's own checks
