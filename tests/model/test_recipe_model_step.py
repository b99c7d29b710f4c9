"""The recipe "Adding a model step" (docs/architecture.md), done: a throw-away step kind
``tick`` from outside the source tree (tests/plugins/gridbench_recipes/model_step.py),
registered by importing its module, validated in a model file and predicted end to end
(a predicted run analysed like any job-flow run)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.model.steps import base

PLUGINS = Path(__file__).parents[1] / "plugins"
MODEL = """\
schema: gridbench.model/1
name: tick-recipe
chain:
- {stage: queued, kind: delay, source: server, service: {mean: 0.05}}
- {stage: picked, kind: tick, source: server, service: {mean: 0.5}}
- {stage: client_done, kind: delay, source: client, service: {mean: 0.01}}
"""


@pytest.fixture
def tick(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The plugin's step kind, registered into a registry of this test's own."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.setattr(base, "_KINDS", dict(base.step_kinds()))
    name = "gridbench_recipes.model_step"
    mod = sys.modules.get(name)
    return importlib.reload(mod) if mod is not None else importlib.import_module(name)


def test_an_unregistered_step_kind_is_refused_with_the_choices(tmp_path: Path) -> None:
    from gridbench.model.spec import load_model

    path = tmp_path / "m.yaml"
    path.write_text(MODEL.replace("kind: tick", "kind: tock"))
    with pytest.raises(SpecError) as err:
        load_model(path)
    assert "'tock' is not a step kind" in str(err.value)
    assert "delay, tier, side, poll" in str(err.value)


def test_a_step_kind_from_outside_the_tree_is_predicted(tick: ModuleType, tmp_path: Path) -> None:
    from gridbench.jobflow.analysis.experiment import analyze_run
    from gridbench.model.predict import Marking, predict
    from gridbench.model.spec import load_model
    from gridbench.model.sweep import Window, parse_sweeps, points

    assert "tick" in base.step_kinds()
    path = tmp_path / "tick.yaml"
    path.write_text(MODEL)
    model = load_model(path)
    assert base.step_kind("tick").describe(model.chain[1]) == "picked: ticks every 0.5 s"  # type: ignore[index]
    bad = tmp_path / "bad.yaml"
    bad.write_text(MODEL.replace("mean: 0.5", "mean: 0"))
    with pytest.raises(SpecError, match="a tick step needs a period"):
        load_model(bad)

    pts = points(model, parse_sweeps(["rate=4/s"]), Window(duration_s=3.0, drain_s=5.0))
    run, info = predict(pts, tmp_path / "r", {"name": "tick"}, Marking("tick.yaml", model))
    assert info["events"] > 0
    ev = read_trial_log(run / "trials" / "p00-t00")
    picked = ev.filter(ev["stage"] == "picked")
    start = int(ev["t_ns"].min())
    assert picked.height == 12  # every job of 3 s at 4/s was picked up
    # each at a tick of the clock (0.5 s from the trial's start)
    since = (picked["t_ns"].to_numpy() - start) / 1e9
    assert np.allclose(since / 0.5, np.round(since / 0.5), atol=1e-3), since
    m = analyze_run(run)  # analysed like any job-flow run, the new stage in its chain
    assert m["points"][0]["trials"][0]["jobs"]["completed"] == 12, m["points"][0]["trials"][0]
