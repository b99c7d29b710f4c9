"""Every duration in a spec has bounds (issue 22, item 6): no overflow past a year, -0.0 is
0, and a duration that must be positive refuses 0, -0.0 and a denormal."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel, ValidationError

from gridbench.units import Duration, PositiveDuration


class Spec(BaseModel):
    any: Duration = 0.0
    positive: PositiveDuration = 1.0


@pytest.mark.parametrize("value", [1e308, float("inf"), "9" * 400, "9" * 400 + "h", 367 * 86400])
def test_a_duration_past_a_year_is_a_field_error(value: object) -> None:
    with pytest.raises(ValidationError, match=r"at most 366 days|finite"):
        Spec(any=value)


@pytest.mark.parametrize("value", [0, 0.0, -0.0, 1e-320, "0s", "0.0000001s"])
def test_a_positive_duration_refuses_nothing_at_all(value: object) -> None:
    with pytest.raises(ValidationError, match="at least 1us"):
        Spec(positive=value)


def test_minus_zero_is_zero_and_ordinary_values_pass() -> None:
    s = Spec(any=-0.0, positive="1us")
    assert str(s.any) == "0.0" and s.positive == pytest.approx(1e-6)
    assert Spec(any="2h", positive="30s").any == 7200.0
    assert Spec(any=366 * 86400).any == 366 * 86400.0


@pytest.mark.parametrize("value", [True, -1, float("nan"), "1 parsec"])
def test_bad_durations_stay_refused(value: object) -> None:
    with pytest.raises(ValidationError):
        Spec(any=value)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("trials: true", "field 'trials'"),
        ("trial: {duration: 0}", "at least 1us"),
        ("trial: {duration: -0.0}", "at least 1us"),
        ("trial: {duration: 1e-320}", "at least 1us"),
        ("trial: {duration: 1e308}", "at most 366 days"),
    ],
)
def test_a_job_flow_spec_refuses_unbounded_numbers(extra: str, says: str) -> None:
    from pathlib import Path

    from gridbench.errors import SpecError
    from gridbench.jobflow.spec.load import load_spec_text

    text = (Path(__file__).parents[2] / "examples" / "batch-local.yaml").read_text()
    with pytest.raises(SpecError, match=re.escape(says)):
        load_spec_text(text.replace("trials: 3\n", "") + extra + "\n", "b.yaml")
