"""Throw-away local Unix accounts for the virtual-user tests (created and removed as root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
from collections.abc import Iterator

import pytest

# One set of accounts per pytest-xdist worker: a worker removing its accounts at the end
# of a test must not take away another's mid-run (gbtestgw0-alice, or gbtest-alice alone).
PREFIX = f"gbtest{os.environ.get('PYTEST_XDIST_WORKER', '')}-"


@contextlib.contextmanager
def unix_accounts(*names: str) -> Iterator[list[str]]:
    """Create ``gbtest-<name>`` system accounts with a home under /tmp (Grid Engine fails
    a job whose owner has no home: "failed 28"); remove both on exit."""
    if os.geteuid() != 0:
        pytest.fail("creating test accounts needs root")
    made: list[str] = []
    try:
        for n in names:
            user = PREFIX + n
            with contextlib.suppress(KeyError):
                pwd.getpwnam(user)
                made.append(user)  # left over by a killed run: reuse, remove at the end
                continue
            p = subprocess.run(
                [
                    "useradd",
                    "--system",
                    "--create-home",
                    "--base-dir",
                    "/tmp",
                    "--shell",
                    "/usr/sbin/nologin",
                    user,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if p.returncode != 0:
                pytest.fail(f"useradd {user} failed: {p.stderr.strip()}")
            made.append(user)
        yield made
    finally:
        for user in made:
            subprocess.run(["userdel", "--remove", user], capture_output=True, check=False)


@pytest.fixture(name="accounts")
def accounts_fixture() -> Iterator[list[str]]:
    """Two accounts, ``gbtest-alice`` and ``gbtest-bob``."""
    with unix_accounts("alice", "bob") as users:
        yield users
