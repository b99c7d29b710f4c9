"""The load-model registry: one module per model, the spec's load: as a discriminated union,
errors that name the model a field belongs to, and each model's plan contribution."""

from __future__ import annotations

import typing

import pytest

from gridbench.errors import SpecError
from gridbench.jobflow import loads
from gridbench.jobflow.loads.batch import BatchLoad
from gridbench.jobflow.loads.open import OpenLoad
from gridbench.jobflow.loads.probe import ProbeLoad
from gridbench.jobflow.loads.sustain import SustainLoad
from gridbench.jobflow.spec import load_spec_text, make_plan
from gridbench.jobflow.spec.load import sweep_path

HEAD = "name: x\nbackend: {type: noop}\n"


def test_registry_order_and_specs() -> None:
    assert loads.names() == ("open", "sustain", "batch", "probe", "retry", "split")
    for name, model in loads.LOAD_MODELS.items():
        assert model.name == name
        # the spec's discriminator is the model's own name, nothing else
        assert typing.get_args(model.spec.model_fields["model"].annotation) == (name,)
    assert loads.find("nope") is None and loads.find(None) is None
    with pytest.raises(KeyError, match="unknown load model"):
        loads.get("nope")


def test_each_model_parses_into_its_own_spec() -> None:
    cases = {
        "load: {rate: 60}\ntrial: {duration: 10s}\n": OpenLoad,  # model defaults to open
        "load: {model: sustain}\ntrial: {duration: 10s}\n": SustainLoad,
        "load: {model: batch, jobs: 3}\n": BatchLoad,
        "load: {model: probe, count: 2}\n": ProbeLoad,
    }
    for text, cls in cases.items():
        spec, _ = load_spec_text(HEAD + text)
        assert type(spec.load) is cls


def test_unknown_model_is_named_at_its_line() -> None:
    with pytest.raises(SpecError) as e:
        load_spec_text(HEAD + "load:\n  model: steady\n", "exp.yaml")
    msg = str(e.value)
    assert "exp.yaml:4" in msg and "load.model" in msg
    assert "'open', 'sustain', 'batch', 'probe', 'retry' or 'split'" in msg
    assert "allowed values" in msg


def test_a_field_of_another_model_names_that_model() -> None:
    text = HEAD + "load:\n  model: sustain\n  rate: 60\ntrial: {duration: 10s}\n"
    with pytest.raises(SpecError) as e:
        load_spec_text(text, "exp.yaml")
    msg = str(e.value)
    assert "exp.yaml:5" in msg and "load.rate" in msg
    assert "model: open" in msg and "model: sustain" in msg
    # a plain typo is still a plain unknown field, under its own name (no union tag)
    with pytest.raises(SpecError) as e:
        load_spec_text(HEAD + "load: {model: batch, jobz: 3}\n", "exp.yaml")
    assert "load.jobz" in str(e.value) and "[batch]" not in str(e.value)


def test_sweep_keys_of_every_model_are_load_fields() -> None:
    for key in ("rate", "users", "jobs", "count", "seed"):
        assert sweep_path(key) == ["load", key]


def test_plan_contributions() -> None:
    def plan_of(text: str) -> dict[str, object]:
        spec, data = load_spec_text(HEAD + text)
        point: dict[str, object] = make_plan(spec, data).to_dict()["points"][0]
        return point

    steps = "load: {schedule: [{rate: 1/s, duration: 5s}, {rate: 2/s, duration: 5s}]}\n"
    assert plan_of(steps) == {
        "index": 0,
        "values": {},
        "jobs_per_trial": 15,
        "seconds_per_trial": 13.0,
        "peak_rate_per_s": 2.0,
    }
    sustain = plan_of("load: {model: sustain}\ntrial: {duration: 30s}\n")
    assert (sustain["jobs_per_trial"], sustain["seconds_per_trial"]) == (None, 33.0)
    assert sustain["peak_rate_per_s"] is None
    batch = plan_of("load: {model: batch, jobs: 7}\njob: {runtime: 2s}\n")
    # 10 submitters: 10 ms per call each, so the 1 ms per job floor; then the 5 s drain
    assert (batch["jobs_per_trial"], batch["seconds_per_trial"]) == (7, 5.007)
    probe = plan_of(
        "load: {model: probe, count: 3, gap: 1s, burst: {requests: 2, threads: [1, 2]}}\n"
    )
    assert (probe["jobs_per_trial"], probe["seconds_per_trial"]) == (7, 6.0)
