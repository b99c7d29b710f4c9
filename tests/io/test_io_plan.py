"""``gridbench io plan``: the steps and an estimated duration from a cost model of the spec
(sizes, repetitions, targets); no timing is asserted, only that the estimate follows it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.io.load import load_io_spec_text
from gridbench.io.model import IoSpec
from gridbench.io.plan import FIO_START_S, RUN_FIXED_S, estimated_seconds, steps
from gridbench.io.runner import plan_steps

BASE = "name: x\ntargets: [{name: a, path: /tmp/a}, {name: b, path: /tmp/b}]\n"
EXAMPLES = Path(__file__).parents[2] / "examples"


def spec(extra: str = "", base: str = BASE) -> IoSpec:
    s, _ = load_io_spec_text(base + extra, "t.yaml")
    return s


def work(s: IoSpec) -> float:
    """The estimate without the fixed start and reports."""
    return estimated_seconds(s) - RUN_FIXED_S


def test_the_plan_has_the_runner_s_steps() -> None:
    s = spec("repetitions: 2\nconcurrency: {enabled: true, clients: [1, 2]}\n")
    assert len(steps(s)) == plan_steps(s) == 2 * 2 * (9 + 2 * 2)


def test_the_estimate_doubles_with_repetitions_and_targets() -> None:
    one = spec("repetitions: 2\n")
    assert work(spec("repetitions: 4\n")) == pytest.approx(2 * work(one))
    single = spec("repetitions: 2\n", base="name: x\ntargets: [{name: a, path: /tmp/a}]\n")
    assert work(one) == pytest.approx(2 * work(single))


def test_the_estimate_grows_with_the_file_size_and_the_clients() -> None:
    small = work(spec("iozone: {file_size: 64M}\n"))
    big = work(spec("iozone: {file_size: 4G}\n"))
    assert big > small > 0
    # the data part scales with the size; each fio run's start does not
    runs = len(steps(spec("iozone: {file_size: 64M}\n")))
    fixed = runs * FIO_START_S
    assert (big - fixed) > 10 * (small - fixed)
    few = work(spec("concurrency: {enabled: true, clients: [1]}\n"))
    many = work(spec("concurrency: {enabled: true, clients: [1, 8]}\n"))
    assert many > few


def test_cache_drops_and_checks_cost_time() -> None:
    assert work(spec("cache: drop_caches\n")) > work(spec("cache: direct\n"))
    assert work(spec("consistency: {enabled: true}\n")) > work(spec())


def test_io_plan_prints_the_steps_and_the_estimate(tmp_path: Path) -> None:
    path = EXAMPLES / "io-local-quick.yaml"
    env = cli_env(tmp_path)
    p = subprocess.run([str(BIN), "io", "plan", str(path)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "estimated duration about" in p.stdout and "nothing was started" in p.stdout
    j = subprocess.run(
        [str(BIN), "io", "plan", str(path), "--json"], env=env, capture_output=True, text=True
    )
    doc = json.loads(j.stdout)
    assert len(doc["steps"]) == 92 and doc["estimated_seconds"] > 0
