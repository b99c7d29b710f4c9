"""The recipe "Adding a stamp kind" (docs/architecture.md), done: a throw-away kind
``job_dirs`` from outside the source tree (tests/plugins/gridbench_recipes/stamp_kind.py),
registered by importing its module, declared in a ``stamps:`` block and read in a real
short run of the command backend's demo CLI."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.events.stamps import kind
from gridbench.jobflow.events.stamps.kind import parse_plan

PLUGINS = Path(__file__).parents[1] / "plugins"
SOURCE = {
    "tier": "demo", "kind": "job_dirs", "root": "{state_dir}", "file": "started",
    "stage": "demo_started", "precision": "us", "time": {"format": "epoch_ns"},
}  # fmt: skip


@pytest.fixture
def job_dirs(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The plugin's stamp kind, registered into a registry of this test's own."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.setattr(kind, "_KINDS", dict(kind.stamp_kinds()))
    name = "gridbench_recipes.stamp_kind"
    mod = sys.modules.get(name)
    return importlib.reload(mod) if mod is not None else importlib.import_module(name)


def test_an_unregistered_kind_is_refused_with_the_place() -> None:
    with pytest.raises(SpecError) as err:
        parse_plan({"sources": [{**SOURCE, "kind": "job_dirz"}]}, "backend.options.stamps")
    assert "backend.options.stamps.sources.0" in str(err.value)
    assert "'sqlite', 'log', 'files'" in str(err.value)


def test_a_kind_from_outside_the_tree_stamps_a_real_run(
    job_dirs: ModuleType, tmp_path: Path
) -> None:
    from test_command_runner import demo, spec
    from test_runner import events, run_spec

    plan = parse_plan({"sources": [SOURCE]}, "stamps")
    assert isinstance(plan.sources[0], job_dirs.JobDirsSource)
    assert plan.stages() == [("demo_started", "demo", 1_000)]
    with pytest.raises(SpecError, match="is not a stage name"):
        parse_plan({"sources": [{**SOURCE, "stage": "Bad"}]}, "stamps")

    state = tmp_path / "state"
    stamps = {"order": ["demo_started"], "settle_s": 0, "sources": [SOURCE]}
    body = """
job: {command: [/bin/true]}
load: {model: open, rate: 20/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.2s, drain: 30s}
"""
    out = run_spec(spec("recipe-stamps", demo(state, stamps=stamps), body), tmp_path / "results")
    ev = events(out)
    started = ev.filter(pl.col("stage") == "demo_started")
    assert started.height == 3 and set(started["source"]) == {"demo"}
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="min")
    assert (wide["submit"] < wide["demo_started"]).all()
    assert (wide["demo_started"] < wide["client_done"]).all()
