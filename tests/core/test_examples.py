"""Every shipped example spec validates and plans (they are documentation that must not rot)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench.jobflow.examples import demo_spec_path
from gridbench.jobflow.spec import load_spec, make_plan

# job-flow specs; the storage specs (io-*.yaml) are checked by tests/io/test_io_examples.py,
# the messaging specs (net-*.yaml) by tests/net/test_net_run.py, the campaigns
# (campaign-*.yaml) by tests/campaign/
EXAMPLES = sorted(
    p
    for p in (Path(__file__).parents[2] / "examples").glob("*.yaml")
    if not p.name.startswith(("io-", "net-", "study-", "campaign-"))
)


@pytest.mark.parametrize("path", [*EXAMPLES, demo_spec_path()], ids=lambda p: p.name)
def test_example_plans(path: Path) -> None:
    spec, data = load_spec(path)
    plan = make_plan(spec, data, str(path))
    assert plan.trials and plan.estimated_seconds > 0


def test_demo_is_the_compressed_edgi_ramp() -> None:
    spec, data = load_spec(demo_spec_path())
    plan = make_plan(spec, data)
    assert [p.peak_rate_per_s for p in plan.points] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert spec.trials == 3 and spec.warmup.fraction == 0.15
    assert plan.estimated_seconds < 8 * 60  # "a few minutes in total"
