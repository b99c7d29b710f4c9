"""A prediction compared with a measurement: the difference is the model's error, not a
change of the system. When the baseline and a compared run are one measured and one
predicted (a what-if model's run, ``predicted`` in its experiment.json), each of their
diffs says ``model over`` or ``model under`` (the prediction above or below the
measurement, significantly) or ``within model error``, never "improved" or "regressed",
and the comparison notes it once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from gridbench.compare.model import Comparison, Diff, ExperimentMetrics, MetricComparison

#: the verdicts of a prediction against a measurement
MODEL_VERDICTS = ("model over", "model under", "within model error")


def is_predicted(e: ExperimentMetrics) -> bool:
    """Whether the run is a model's prediction rather than a measurement."""
    return isinstance(e.record.get("predicted"), Mapping)


def _verdict(d: Diff, predicted_is_test: bool) -> str:
    if not d.significant or d.difference is None or d.difference == 0:
        return "within model error"
    above = d.difference > 0 if predicted_is_test else d.difference < 0
    return "model over" if above else "model under"


def as_model_error(c: Comparison) -> Comparison:
    """``c`` with every prediction-against-measurement diff worded as model error."""
    kinds = {e.id: is_predicted(e) for e in c.experiments}
    base = kinds.get(c.baseline, False)
    mixed = {eid for eid, pred in kinds.items() if eid != c.baseline and pred != base}
    if not mixed:
        return c

    def diff(d: Diff) -> Diff:
        if d.experiment not in mixed:
            return d
        note = "prediction against measurement: model error"
        return dataclasses.replace(d, verdict=_verdict(d, not base), note=d.note or note)

    def metric(m: MetricComparison) -> MetricComparison:
        return dataclasses.replace(m, diffs=tuple(diff(d) for d in m.diffs))

    points = tuple(
        dataclasses.replace(p, metrics=tuple(metric(m) for m in p.metrics)) for p in c.points
    )
    said = (
        "a prediction compared with a measurement: the differences are the model's error "
        "(model over / under the measurement), not a change of the system"
    )
    return dataclasses.replace(c, points=points, notes=(*c.notes, said))
