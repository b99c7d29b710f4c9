"""Spec loading, validation errors with lines, overrides, sweep expansion and safety caps."""

from __future__ import annotations

import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.spec import load_spec_text, make_plan
from gridbench.jobflow.spec.plan import needs_confirmation
from gridbench.jobflow.specbase.units import parse_rate
from gridbench.units import parse_duration

BASE = """\
name: t
backend: {type: noop}
load:
  model: open
  rate: 60
trial: {duration: 10s}
"""


def test_units() -> None:
    assert parse_duration("150ms") == pytest.approx(0.15)
    assert parse_duration("2m") == 120.0
    assert parse_duration(3) == 3.0
    assert parse_rate(60) == pytest.approx(1.0)  # bare numbers are per minute
    assert parse_rate("2/s") == 2.0
    assert parse_rate("7200/h") == 2.0
    with pytest.raises(ValueError):
        parse_duration("soon")
    with pytest.raises(ValueError):
        parse_rate(-1)


def test_valid_spec_and_plan() -> None:
    spec, data = load_spec_text(BASE + "sweep: {rate: [20, 40, 60]}\ntrials: 2\n")
    plan = make_plan(spec, data)
    assert [p.peak_rate_per_s for p in plan.points] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [p.jobs_per_trial for p in plan.points] == [3, 6, 10]
    assert plan.total_jobs == (3 + 6 + 10) * 2
    assert [t.trial_id for t in plan.trials][:3] == ["p00-t00", "p00-t01", "p01-t00"]


def test_unknown_field_names_line_and_fix() -> None:
    with pytest.raises(SpecError) as e:
        load_spec_text(BASE.replace("  rate: 60", "  rat: 60"), "exp.yaml")
    msg = str(e.value)
    assert "exp.yaml:5" in msg and "load.rat" in msg and "fix:" in msg


def test_bad_value_names_line() -> None:
    with pytest.raises(SpecError) as e:
        load_spec_text(BASE.replace("rate: 60", "rate: lots"), "exp.yaml")
    assert "exp.yaml:5" in str(e.value) and "expected a rate" in str(e.value)


def test_several_errors_listed() -> None:
    text = BASE.replace("rate: 60", "rate: 60\n  pool: -1") + "trials: 0\n"
    with pytest.raises(SpecError) as e:
        load_spec_text(text, "exp.yaml")
    msg = str(e.value)
    assert "load.pool" in msg and "trials" in msg and msg.count("exp.yaml:") == 2


def test_yaml_syntax_error() -> None:
    with pytest.raises(SpecError) as e:
        load_spec_text("name: x\n  backend: [\n", "broken.yaml")
    assert "broken.yaml:2" in str(e.value) and "not valid YAML" in str(e.value)


def test_duplicate_key_rejected() -> None:
    with pytest.raises(SpecError):
        load_spec_text(BASE + "trials: 1\ntrials: 2\n", "dup.yaml")


def test_open_model_needs_one_rate_source() -> None:
    with pytest.raises(SpecError) as e:
        load_spec_text(BASE.replace("rate: 60", "rate: 60\n  ramp: {from: 1, to: 2, duration: 5s}"))
    assert "exactly one of rate, schedule or ramp" in str(e.value)


def test_overrides() -> None:
    spec, _ = load_spec_text(BASE, overrides=["trials=4", "load.rate=3/s", "job.runtime=2s"])
    assert spec.trials == 4 and spec.load.rate == 3.0 and spec.job.runtime == 2.0
    with pytest.raises(SpecError):
        load_spec_text(BASE, overrides=["trials"])
    with pytest.raises(SpecError) as e:
        load_spec_text(BASE, overrides=["load.bogus=1"])
    assert "load.bogus" in str(e.value)


def test_sweep_bad_key_and_bad_value() -> None:
    with pytest.raises(SpecError) as e:
        load_spec_text(BASE + "sweep: {colour: [1]}\n")
    assert "colour" in str(e.value) and "fix:" in str(e.value)
    spec, data = load_spec_text(BASE + "sweep: {rate: [60, oops]}\n")
    with pytest.raises(SpecError) as e:
        make_plan(spec, data)
    assert "oops" in str(e.value)


def test_a_sweep_key_into_a_single_value_names_the_key() -> None:
    text = BASE + "job: {runtime: 1s}\nsweep: {job.runtime.x: [1s]}\n"
    spec, data = load_spec_text(text, "s.yaml")
    with pytest.raises(SpecError) as e:
        make_plan(spec, data, "s.yaml")
    assert e.value.where == "s.yaml: sweep.job.runtime.x"
    assert "job.runtime is a single value, not a mapping" in str(e.value)


def test_a_sweep_of_more_points_than_a_plan_holds_is_refused_before_any_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """100 x 100 x 100 values are a 1.3 kB spec and a million points: refused at once
    (it once built every point, gigabytes and minutes, before the caps were checked)."""
    import gridbench.jobflow.spec.plan as plan

    built: list[object] = []
    real = plan.validate_data
    monkeypatch.setattr(plan, "validate_data", lambda *a, **k: built.append(1) or real(*a, **k))
    many = ", ".join(f"{r}/s" for r in range(1, 101))
    runtimes = ", ".join(f"{r}s" for r in range(1, 101))
    text = BASE + f"sweep: {{rate: [{many}], pool: [{many.replace('/s', '')}], "
    text += f"job.runtime: [{runtimes}]}}\n"
    spec, data = load_spec_text(text, "s.yaml")
    with pytest.raises(SpecError) as e:
        make_plan(spec, data, "s.yaml")
    assert "1,000,000 points (100 × 100 × 100" in str(e.value) and not built
    assert e.value.where == "s.yaml: sweep"
    spec, data = load_spec_text(BASE + "sweep: {rate: [1/s, 2/s], job.runtime: [1s, 2s]}\n")
    assert len(make_plan(spec, data).points) == 4 and len(built) == 4


def test_safety_caps() -> None:
    spec, data = load_spec_text(BASE + "sweep: {rate: [60, 600]}\nsafety: {max_rate: 5/s}\n")
    with pytest.raises(SpecError) as e:
        make_plan(spec, data)
    assert "safety.max_rate" in str(e.value)
    spec, data = load_spec_text(BASE + "trials: 10\nsafety: {max_jobs: 50}\n")
    with pytest.raises(SpecError) as e:
        make_plan(spec, data)
    assert "100 jobs" in str(e.value)
    spec, data = load_spec_text(BASE + "safety: {confirm_above: 5}\n")
    assert needs_confirmation(make_plan(spec, data))


def test_closed_models_need_their_sizes() -> None:
    with pytest.raises(SpecError):
        load_spec_text("name: s\nbackend: {type: noop}\nload: {model: sustain}\n")
    with pytest.raises(SpecError):
        load_spec_text("name: b\nbackend: {type: noop}\nload: {model: batch}\n")
    spec, data = load_spec_text(
        "name: b\nbackend: {type: noop}\nload: {model: batch, jobs: 50, submitters: 5}\n"
    )
    assert make_plan(spec, data).total_jobs == 50


def test_a_bad_sweep_value_is_one_error_with_one_fix() -> None:
    spec, data = load_spec_text(
        "name: s\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\n"
        "trial: {duration: 1s}\nsweep: {rate: [1/s, [1]]}\n",
        "s.yaml",
    )
    with pytest.raises(SpecError) as info:
        make_plan(spec, data, "s.yaml")
    text = str(info.value)
    assert text.startswith("s.yaml (sweep point {'rate': [1]}): field 'load.rate': expected a rate")
    assert text.count("fix") == 1, text


@pytest.mark.parametrize("point", [4, 99, -1])
def test_a_threshold_on_a_point_the_sweep_lacks_is_refused_before_the_run(point: int) -> None:
    from gridbench.jobflow.experiment.check import check_config

    text = (
        "name: s\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\ntrial: {duration: 1s}\n"
        "sweep: {rate: [1/s, 2/s, 3/s, 4/s]}\n"
        f"thresholds: [{{metric: latency.overall.p99, value: 9, point: {point}}}]\n"
    )
    spec, data = load_spec_text(text, "s.yaml")
    plan = make_plan(spec, data, "s.yaml")
    with pytest.raises(SpecError) as info:
        check_config([p.spec for p in plan.points], host=False)
    assert info.value.where == "thresholds.0.point"
    assert f"no point with index {point} (the sweep has 4: 0 to 3)" in info.value.message
    ok, data = load_spec_text(text.replace(f"point: {point}", "point: 3"), "s.yaml")
    check_config([p.spec for p in make_plan(ok, data, "s.yaml").points], host=False)


@pytest.mark.parametrize(("command", "says"), [("[]", "at least 1 item"), ("['']", "empty")])
def test_a_job_needs_a_program(command: str, says: str) -> None:
    text = "name: s\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\ntrial: {duration: 1s}\n"
    with pytest.raises(SpecError, match=rf"field 'job.command': .*{says}"):
        load_spec_text(text, "s.yaml", [f"job.command={command}"])
