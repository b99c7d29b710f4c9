"""A net spec runs the patterns it names; one that names none runs them all (a spec with
only ``transfer:`` once ran every default pattern: 275 s instead of a few)."""

from __future__ import annotations

import pytest

from gridbench.errors import SpecError
from gridbench.messaging.load import load_net_spec_text
from gridbench.messaging.plan import steps


def enabled(text: str) -> dict[str, bool]:
    s, _ = load_net_spec_text(text, "t.yaml")
    return {k: getattr(s, k).enabled for k in ("pingpong", "echo", "burst", "transfer")}


def test_only_the_named_pattern_runs() -> None:
    assert enabled("name: x\ntransfer: {tools: [tcp_streams], size: 1M}\n") == {
        "pingpong": False,
        "echo": False,
        "burst": False,
        "transfer": True,
    }


def test_naming_none_runs_every_pattern() -> None:
    assert all(enabled("name: x\n").values())


def test_an_explicitly_disabled_pattern_counts_as_named() -> None:
    with pytest.raises(SpecError, match="every pattern is disabled"):
        enabled("name: x\npingpong: {enabled: false}\n")
    assert enabled("name: x\npingpong: {enabled: false}\necho: {}\n")["echo"]


def test_the_plan_has_only_the_named_pattern_s_steps() -> None:
    s, _ = load_net_spec_text("name: x\ntransfer: {tools: [tcp_streams], size: 1M}\n", "t.yaml")
    full, _ = load_net_spec_text("name: x\n", "t.yaml")
    assert 0 < len(steps(s)) < len(steps(full))
