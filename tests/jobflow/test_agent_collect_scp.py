"""collect's scp follows the SSH options the agents were started with: a known_hosts file
(a lab inventory names one) is the file scp checks, None turns checking off."""

from __future__ import annotations

from pathlib import Path

from gridbench.jobflow.run.agent_collect import _scp_argv


def test_a_known_hosts_file_is_the_one_scp_checks(tmp_path: Path) -> None:
    known = str(tmp_path / "known_hosts")
    argv = _scp_argv("10.247.1.2", "log", tmp_path / "d", {"known_hosts": known, "port": 22})
    assert argv[argv.index("-o", 3) + 1] == f"UserKnownHostsFile={known}"
    assert "StrictHostKeyChecking=no" not in argv
    assert argv[-2:] == ["10.247.1.2:log", str(tmp_path / "d")]


def test_known_hosts_none_turns_checking_off(tmp_path: Path) -> None:
    argv = _scp_argv("h", "log", tmp_path / "d", {"known_hosts": None, "username": "u"})
    assert "StrictHostKeyChecking=no" in argv and "UserKnownHostsFile=/dev/null" in argv
    assert argv[-2] == "u@h:log"


def test_default_known_hosts_adds_nothing(tmp_path: Path) -> None:
    argv = _scp_argv("h", "log", tmp_path / "d", {})
    assert not any(a.startswith("UserKnownHostsFile") for a in argv)
