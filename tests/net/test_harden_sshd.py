"""The throw-away root sshd (key login) dies with its wrapper, even when the wrapper is
killed with SIGKILL together with the controller (issue 22, item 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest


def keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30
    )


def test_sshd_dies_when_its_wrapper_is_killed_9(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    keygen(keys / "host")
    keygen(keys / "client")
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    argv = [sys.executable, "-m", "gridbench.messaging.transports.sshd", "--bind", "127.0.0.1"]
    wrapper = subprocess.Popen(
        [*argv, "--dir", str(keys)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert wrapper.stdout is not None
    line = wrapper.stdout.readline().decode()
    if not line.startswith("READY "):
        wrapper.kill()
        pytest.fail(f"sshd wrapper did not start: {line!r} {wrapper.communicate()[1][-2000:]!r}")
    children = psutil.Process(wrapper.pid).children()
    assert [c.name() for c in children] == ["sshd"]
    sshd = children[0]
    wrapper.kill()
    wrapper.wait(timeout=10)
    try:
        sshd.wait(timeout=10)
    except psutil.TimeoutExpired:
        sshd.kill()
        pytest.fail("sshd outlived its wrapper's SIGKILL")
    assert not sshd.is_running()
