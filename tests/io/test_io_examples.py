"""The shipped io example specs validate (they are documentation that must not rot)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench.io.load import load_io_spec
from gridbench.io.runner import plan_steps

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("io-*.yaml"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_validates(path: Path) -> None:
    spec, _ = load_io_spec(path)
    assert spec.targets and plan_steps(spec) > 0
    if path.name == "io-seed-nfs.yaml":  # the seed's parameters are the defaults it shows
        assert spec.iozone.file_size == 2 * 2**30 and spec.iozone.record_size == 128 * 2**10
        assert spec.bonnie.size == 2047 * 2**20 and spec.http is not None
        assert spec.http.sizes == [128 * 2**20, 1536 * 2**20]
