"""A value that does not fit a field's pattern is explained in words, never with the
regular expression ('String should match pattern ^[A-Za-z][A-Za-z0-9_-]{0,39}$')."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gridbench.errors import SpecError
from gridbench.io.model import IoSpec
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.messaging.model import NetSpec
from gridbench.specload import PATTERN_WORDS
from gridbench.study.load import load_study_spec_text
from gridbench.study.model import StudySpec


def _patterns(node: Any) -> set[str]:
    if isinstance(node, dict):
        own = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return own.union(*(_patterns(v) for k, v in node.items() if k != "pattern"))
    if isinstance(node, list):
        return set().union(*(_patterns(v) for v in node))
    return set()


@pytest.mark.parametrize("model", [ExperimentSpec, IoSpec, NetSpec, StudySpec])
def test_every_spec_pattern_has_words(model: Any) -> None:
    found = _patterns(model.model_json_schema())
    assert found, "no pattern found: the walk is broken"
    assert found <= set(PATTERN_WORDS), sorted(found - set(PATTERN_WORDS))
    for pattern in found:  # the words' dictionary holds the very patterns pydantic checks
        re.compile(pattern)


def test_a_value_off_the_pattern_is_said_in_words() -> None:
    study = "name: s\npurpose: p\ntools: [{id: a, title: A, tasks: [{id: t, title: T}]}]\n"
    with pytest.raises(SpecError) as info:
        load_study_spec_text(study + "participants: ['1 x']\n", "s.yaml")
    text = str(info.value)
    assert "'1 x' is not 1 to 40 letters, digits, '_' or '-', the first a letter" in text
    assert "String should match" not in text and "[A-Za-z]" not in text
    flow = "name: f\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\ntrial: {duration: 1s}\n"
    with pytest.raises(SpecError, match=r"'a b' is not letters, digits, '\.', '_', '@' or '-'"):
        load_spec_text(flow + "users: [{name: 'a b'}]\n", "f.yaml")
