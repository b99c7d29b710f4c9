"""Shared fixtures: a results root and the path to the gridbench CLI of this venv."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# One Grid Engine cell per session for every module that uses it: a fixture imported into
# several test modules would be a separate session fixture in each, and a second cell cannot
# start while the first holds the cell's qmaster.
from sge_cluster import sge_fixture  # noqa: F401

BIN = Path(sys.executable).with_name("gridbench")

# Tests live in folders by area (core, jobflow, io, net, study, web, model, hosts); a few
# test modules lend helpers to modules of another area, so every area folder is importable.
for _area in sorted(Path(__file__).parent.iterdir()):
    if _area.is_dir() and any(_area.glob("test_*.py")) and str(_area) not in sys.path:
        sys.path.append(str(_area))


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "results"
    monkeypatch.setenv("GRIDBENCH_RESULTS", str(root))
    return root


def cli_env(results: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["GRIDBENCH_RESULTS"] = str(results)
    env["COLUMNS"] = "200"
    return env


# One short real run per family for the whole session (after BIN and cli_env: it uses them)
from family_runs import io_run, jobflow_run, net_run  # noqa: E402, F401
