"""Deeply nested YAML is one clear SpecError, never a RecursionError."""

from __future__ import annotations

import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.specload import MAX_SPEC_DEPTH, _flow_depth, parse_yaml, plain_data


@pytest.mark.parametrize("depth", [MAX_SPEC_DEPTH + 5, 400, 50_000])
def test_deep_flow_yaml_is_a_spec_error(depth: int) -> None:
    text = "name: x\njob: " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(SpecError) as err:
        load_spec_text(text, "deep.yaml")
    assert "nested too deeply" in err.value.message
    assert err.value.where == "deep.yaml" and err.value.fix


def test_ruamel_recursion_is_a_spec_error() -> None:
    # compact nested block sequences: ruamel's composer recurses past Python's limit
    with pytest.raises(SpecError) as err:
        parse_yaml("job:\n" + "- " * 3000 + "x\n", "deep.yaml")
    assert "nested too deeply" in err.value.message and err.value.where == "deep.yaml"


def test_flow_depth_counts_brackets_only_when_deep() -> None:
    assert _flow_depth("a: [1, {b: [2]}]") == 6  # few brackets: their count, an upper bound
    assert _flow_depth("a: " + "[" * 100 + "]" * 100) == 100
    assert _flow_depth("p: '" + "[a]" * 100 + "'") == 1  # balanced (regexes): shallow


def test_deep_block_yaml_is_a_spec_error() -> None:
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(2000)) + "  " * 2000 + "v\n"
    with pytest.raises(SpecError, match="nested too deeply"):
        plain_data(parse_yaml(text, "deep.yaml"))


def test_nesting_within_the_cap_is_kept() -> None:
    depth = MAX_SPEC_DEPTH - 2
    data = plain_data(parse_yaml("a: " + "[" * depth + "1" + "]" * depth, "ok.yaml"))
    node = data["a"]
    for _ in range(depth - 1):
        node = node[0]
    assert node == [1]
