"""Shared fixtures: a results root and the path to the gridbench CLI of this venv."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gluster_fixtures import gluster_volume  # noqa: F401 (one volume per session)

# One Grid Engine cell per session for every module that uses it: a fixture imported into
# several test modules would be a separate session fixture in each, and a second cell cannot
# start while the first holds the cell's qmaster.
# The same for the lab of hosts (network namespaces with sshd) that multi-host tests share.
from lab_fixtures import lab  # noqa: F401
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

# ---- running the suite on several workers (pytest-xdist, --dist loadgroup) ----
# A live daemon is one per run, on one worker: every test that uses it is in its group.
# Grid Engine and ARC hold machine-wide state (the cell's qmaster, port 443); the others
# would only be started twice. The first match in this order names the group.
DAEMON_GROUPS = (
    ("sge", "sge"),
    ("arc", "arc"),
    ("arc_slurm", "arc"),
    ("gram", "globus"),
    ("gridftp", "globus"),
    ("gluster_volume", "gluster"),
    ("slurm4", "slurm"),
    ("slurm_cycles", "slurm"),
    ("slurm", "slurm"),
)
# Files that make network namespaces with fixed subnets, or that count run folders in the
# shared default results folder (the examples as written), run on one worker in turn.
FILE_GROUPS = {
    "test_examples_as_written.py": "examples",
    "test_net_environments.py": "netns",
    "test_net_floor.py": "netns",
    "test_net_run.py": "netns",
    "test_net_remote.py": "netns",
    "test_agents_hosts.py": "netns",
    "test_agent_check.py": "netns",
    "test_io_links.py": "netns",
    "test_io_clients.py": "netns",
    "test_reference_lab.py": "netns",
}
AREA_GROUPS = {"hosts": "netns"}  # the lab: a bridge and namespaces of its own


def _xdist_group(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    for fixture, group in DAEMON_GROUPS:
        if fixture in names:
            return group
    path = Path(str(item.fspath))
    if path.name in FILE_GROUPS:
        return FILE_GROUPS[path.name]
    if path.parent.name in AREA_GROUPS:
        return AREA_GROUPS[path.parent.name]
    # A module whose tests share a fixture of ours wider than one test (a real run, a live
    # server) stays on one worker, so the fixture is made once per module at most; other
    # tests spread one by one (pytest's own wide fixtures, tmp_path_factory, do not count).
    info = getattr(item, "_fixtureinfo", None)
    defs = [d[-1] for d in info.name2fixturedefs.values() if d] if info is not None else []
    if any(d.scope != "function" and _ours(d.func) for d in defs):
        return f"module:{path.name}"
    return None


def _ours(func: object) -> bool:
    """A fixture defined in this suite (not by pytest or a plugin)."""
    module = getattr(func, "__module__", "") or ""
    return not module.startswith(("_pytest", "pytest", "xdist", "anyio", "hypothesis"))


# tryfirst: xdist's own hook reads the groups into the node ids, so they are set before it
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = _xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
