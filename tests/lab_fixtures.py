"""A lab of hosts for the suite's multi-host tests, made by the real ``gridbench lab up``
(network namespaces on a bridge, each with its own sshd and node_exporter; docs/hosts.md)
and removed by ``gridbench lab down``. A lab that cannot start fails the test with its
log's tail: nothing here is skipped. Root only, as the suite runs.

``lab`` is one lab for the whole session (imported into conftest.py, so every module shares
it; under pytest-xdist the modules that use it are in conftest's "netns" group, on one
worker). :func:`made_lab` makes another, for a module that needs a lab of its own shape
(the lab's ``--rate`` is one rate for all its hosts).

Every target of traffic is an address of a lab's own namespaces."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gridbench.hosts.inventory import Host, Inventory, load_inventory
from gridbench.hosts.lab.book import STATE_ROOT

REPO = Path(__file__).resolve().parents[1]
CMD_TIMEOUT = 180
#: the session's lab: 3 hosts, every link shaped to a LAN's 1 Gbit/s both ways, and a
#: Toxiproxy path adding LATENCY_MS to host 3's ssh (its ``proxies[22]``)
LAB_HOSTS = 3
LAB_RATE = "1gbit"
LATENCY_MS = 20


@dataclass(frozen=True)
class Lab:
    name: str
    inventory: Path  # /run/gridbench-lab/NAME/inventory.yaml
    inv: Inventory

    def host(self, k: int) -> Host:
        """Host ``NAME-k`` (1-based, as the lab names them)."""
        return self.inv.hosts[f"{self.name}-{k}"]

    @property
    def key(self) -> Path:
        """The lab's throw-away client key (authorised for root on every host)."""
        return Path(self.host(1).ssh["client_keys"][0])


def lab_cli(*args: str, timeout: float = CMD_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``gridbench lab ARGS`` as a user runs it (this venv's interpreter)."""
    return subprocess.run(
        [sys.executable, "-m", "gridbench.cli", "lab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "250"},
    )


def _toxiproxy() -> None:
    """The Toxiproxy a latency path needs (installed as scripts/test does; idempotent)."""
    r = subprocess.run(
        [str(REPO / "scripts" / "install-toxiproxy")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if r.returncode != 0:
        pytest.fail(f"scripts/install-toxiproxy failed:\n{r.stderr[-3000:]}")


@contextlib.contextmanager
def made_lab(
    prefix: str, hosts: int, *, rate: str | None = None, latency: tuple[str, ...] = ()
) -> Iterator[Lab]:
    """A lab named ``prefix`` + 6 hex digits (at most 8 characters in all: the lab's
    interfaces carry its name), of ``hosts`` hosts; ``latency``: ``--latency`` values with
    ``{name}`` for the lab's name. ``lab down`` afterwards, which must succeed."""
    name = prefix + secrets.token_hex(3)
    args = ["up", "--name", name, "--hosts", str(hosts)]
    if rate:
        args += ["--rate", rate]
    if latency:
        _toxiproxy()
    for path in latency:
        args += ["--latency", path.format(name=name)]
    r = lab_cli(*args)
    if r.returncode != 0:
        lab_cli("down", "--name", name)  # whatever a half-made lab left (it removes its own)
        pytest.fail(
            f"gridbench lab {' '.join(args)} failed ({r.returncode}):\n"
            f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        )
    path = STATE_ROOT / name / "inventory.yaml"
    try:
        yield Lab(name, path, load_inventory(path))
    finally:
        down = lab_cli("down", "--name", name)
        if down.returncode != 0:
            pytest.fail(f"gridbench lab down --name {name} failed:\n{down.stdout}{down.stderr}")


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """The session's lab (LAB_HOSTS hosts at LAB_RATE, LATENCY_MS to host 3's ssh)."""
    with made_lab(
        "s", LAB_HOSTS, rate=LAB_RATE, latency=(f"{{name}}-3:22:{LATENCY_MS}ms",)
    ) as made:
        yield made
