"""One short real run per family, shared by the whole session (registered in conftest):
job flow on the reference grid (a 2-point rate sweep), storage on two local directories
(fio, with its latency log) and messaging on loopback (TCP ping-pong). Tests that damage
or alter a run copy it first (:func:`copy_run`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env

JOBFLOW = """\
name: fam-jf
backend: {type: reference, options: {preset: batched}}
job: {runtime: 0.2s}
load: {model: open, rate: 2/s}
sweep: {rate: [2/s, 5/s]}
trial: {duration: 2s}
timeouts: {status_interval: 0.2s}
"""
IO = """\
name: fam-io
targets:
  - {{name: a, path: {a}}}
  - {{name: b, path: {b}}}
baseline: a
repetitions: 1
iozone: {{file_size: 1M, record_size: 64k, tests: [write, read], latency_log: true}}
"""
NET = """\
name: fam-net
environments: [host]
pingpong: {transports: [tcp], sizes: {list: [1k, 4k]}, tests: 5, round_trips: 5}
echo: {enabled: false}
burst: {enabled: false}
transfer: {enabled: false}
floor: {sockperf: false, iperf3: false}
"""


def gb(results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=300
    )


def _run(tmp: Path, spec_text: str, *command: str) -> Path:
    spec = tmp / "spec.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    results = tmp / "results"
    p = gb(results, *command, str(spec))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    [run] = [d for d in results.iterdir() if (d / "metrics.json").is_file()]
    return run


@pytest.fixture(scope="session")
def jobflow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("fam-jf"), JOBFLOW, "run")


@pytest.fixture(scope="session")
def io_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fam-io")
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    return _run(tmp, IO.format(a=tmp / "a", b=tmp / "b"), "io", "run")


@pytest.fixture(scope="session")
def net_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("fam-net"), NET, "net", "run")


def copy_run(run: Path, root: Path, name: str | None = None) -> Path:
    """A copy of a shared run under the results root ``root``, to damage or alter."""
    dest = root / (name or run.name)
    shutil.copytree(run, dest)
    return dest
