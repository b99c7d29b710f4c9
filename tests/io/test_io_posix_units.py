"""Storage in depth, the pure parts and the bad inputs: pjdfstest's output parsed into
per-syscall cases, the conformance table and its difference to the baseline, what the
permission bits allow, trace checks, and one clear error for an unknown syscall
category, a file that is not a trace and an unknown user (through the CLI, as a user
meets them)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, cli_env
from gridbench.errors import ResultsError, SpecError
from gridbench.io.conformance import config_text, parse_output, patterns, syscall_of
from gridbench.io.identities import User, expected
from gridbench.io.model_posix import ConformanceSpec
from gridbench.io.posix_analysis import conformance, excluded_by
from gridbench.io.trace import check_trace

# Lines as pjdfstest 0.2.2 prints them (NO_COLOR=1, without -v), from a run on sshfs.
OUTPUT = """\
chmod::change_perm::regular                                                   ok
chmod::change_perm::socket                                                    FAILED
\tcalled `Result::unwrap()` on an `Err` value: EPERM
rename::changed_ctime_success::dir                                       skipped
\trequires features: rename_ctime
ftruncate::affected_create                                                    ok
mkfifo::basic                                                                 \x1b[32mok\x1b[0m
utimensat::y2038                                              failed as expected

Summary: 1 failed, 1 skipped, 3 passed, 1 expected failures, 6 total
"""


def test_parse_output_per_case_with_messages() -> None:
    cases = parse_output(OUTPUT, "out.txt")
    got = [(c["test"], c["syscall"], c["result"]) for c in cases]
    assert got == [
        ("chmod::change_perm::regular", "chmod", "passed"),
        ("chmod::change_perm::socket", "chmod", "failed"),
        ("rename::changed_ctime_success::dir", "rename", "skipped"),
        ("ftruncate::affected_create", "ftruncate", "passed"),
        ("mkfifo::basic", "mkfifo", "passed"),
        ("utimensat::y2038", "utimensat", "expected_failure"),
    ]
    assert cases[1]["detail"].endswith("EPERM")
    assert cases[2]["detail"] == "requires features: rename_ctime"
    assert syscall_of("errors::eloop::x") == "other" and syscall_of("truncate::a") == "truncate"


def test_patterns_select_syscalls() -> None:
    assert patterns(["truncate", "chmod"]) == ["truncate::", "chmod::"]
    assert patterns(list(ConformanceSpec().syscalls)) == []  # all: no filter at all


def test_parse_output_refuses_what_is_not_pjdfstest() -> None:
    with pytest.raises(ResultsError, match="no test result") as e:
        parse_output("error: could not read the configuration\n", "raw/pjdfstest-a.txt")
    assert e.value.where == "raw/pjdfstest-a.txt"


def test_config_names_users_and_features() -> None:
    text = config_text(ConformanceSpec(users=["nobody", "daemon"]), ["nogroup", "daemon"])
    assert 'entries = [["nobody", "nogroup"], ["daemon", "daemon"]]' in text
    assert "posix_fallocate = {}" in text and "allow_remount = false" in text


def _rec(target: str, test: str, result: str) -> dict[str, Any]:
    return {"target": target, "test": test, "syscall": test.split("::")[0], "result": result}


def test_conformance_table_rates_and_difference() -> None:
    recs = [
        _rec("local", "chmod::a", "passed"),
        _rec("local", "chmod::b", "passed"),
        _rec("local", "mkfifo::a", "passed"),
        _rec("local", "open::a", "skipped"),
        _rec("fuse", "chmod::a", "passed"),
        _rec("fuse", "chmod::b", "failed"),
        _rec("fuse", "mkfifo::a", "failed"),
        _rec("fuse", "open::a", "skipped"),
    ]
    out = conformance(recs, "local", [{"match": "mkfifo", "reason": "no FIFOs"}])
    t = {(r["target"], r["syscall"]): r for r in out["table"]}
    assert t[("local", "chmod")]["rate"] == 1.0
    fuse = t[("fuse", "chmod")]
    assert (fuse["passed"], fuse["failed"], fuse["rate"]) == (1, 1, 0.5)
    assert fuse["worse"] == ["chmod::b"] and fuse["baseline_rate"] == 1.0
    # excluded cases are out of the rate, skipped ones too, and both are counted apart
    total = t[("fuse", "total")]
    assert (total["excluded"], total["skipped"], total["rate"]) == (1, 1, 0.5)
    assert "worse" not in t[("local", "total")]
    assert [f["test"] for f in out["failures"]] == ["chmod::b"]
    reasons = {(r["target"], r["reason"]) for r in out["skip_reasons"]}
    assert ("fuse", "no FIFOs") in reasons
    assert excluded_by("open::x", "open", [{"match": "open::", "reason": "r"}]) == "r"


def test_expected_access_follows_the_bits() -> None:
    alice = User("alice", 1001, 1001, (1001,))
    bob = User("bob", 1002, 1002, (1002, 1001))  # bob is in alice's group
    eve = User("eve", 1003, 1003, (1003,))
    assert expected("read", 0o700, 0o600, alice, alice)
    assert not expected("read", 0o700, 0o600, alice, eve)
    # traverse-only: others reach the file but cannot list the directory
    assert expected("read", 0o711, 0o644, alice, eve)
    assert not expected("list", 0o711, 0o644, alice, eve)
    assert expected("traverse", 0o711, 0o644, alice, eve)
    # the group's bits apply to a member, not the others' bits
    assert expected("list", 0o750, 0o640, alice, bob) and not expected(
        "list", 0o750, 0o640, alice, eve
    )
    assert not expected("write", 0o755, 0o644, alice, bob)


def test_trace_checks(tmp_path: Path) -> None:
    good = tmp_path / "t.log"
    good.write_text(
        "fio version 3 iolog\n1 /x add\n2 /x open\n3 /x write 0 4096\n4 /x read 8192 4096\n"
        "5 /x close\n"
    )
    info = check_trace(good)
    assert (info.format, info.ios, info.extent) == ("fio-iolog-v3", 2, 12288)
    blk = tmp_path / "sda.blktrace.0"
    blk.write_bytes(b"\x07\x74\x61\x65" + bytes(60))
    assert check_trace(blk).format == "blktrace"
    for text, why in (
        ("id,op\n1,read\n", "no fio iolog header"),
        ("fio version 2 iolog\n/x read zero 4096\n", "needs an offset"),
        ("fio version 2 iolog\n/x add\n/x open\n", "no read, write or trim"),
        ("fio version 3 iolog\n/x write 0 4096\n", "time stamp"),
    ):
        bad = tmp_path / "bad.log"
        bad.write_text(text)
        with pytest.raises(SpecError, match=why) as e:
            check_trace(bad)
        assert e.value.where == f"replay.trace ({bad})" and e.value.fix


SPEC = """\
name: bad
targets:
  - {{name: a, path: {path}}}
iozone: {{enabled: false}}
{extra}
"""


def _run(tmp_path: Path, cmd: str, extra: str) -> subprocess.CompletedProcess[str]:
    target = tmp_path / "a"
    target.mkdir(exist_ok=True)
    spec = tmp_path / "io.yaml"
    spec.write_text(SPEC.format(path=target, extra=extra))
    return subprocess.run(
        [str(BIN), "io", cmd, str(spec)],
        env=cli_env(tmp_path / "results"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_unknown_syscall_category_is_one_clear_error(tmp_path: Path) -> None:
    p = _run(tmp_path, "validate", "conformance: {enabled: true, syscalls: [chmod, chmood]}")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "io.yaml:5" in p.stderr and "field 'conformance.syscalls.1'" in p.stderr
    assert "'chmod'" in p.stderr and "'utimensat'" in p.stderr  # the allowed values


def test_a_file_that_is_not_a_trace_is_one_clear_error(tmp_path: Path) -> None:
    notrace = tmp_path / "trace.csv"
    notrace.write_text("time,op,offset\n0,read,0\n")
    p = _run(tmp_path, "run", f"replay: {{enabled: true, trace: {notrace}}}")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "not an I/O trace" in p.stderr and "replay.trace" in p.stderr
    assert "--write_iolog" in p.stderr
    assert not (tmp_path / "results").exists()  # refused before anything was written


def test_an_unknown_user_is_one_clear_error(tmp_path: Path) -> None:
    p = _run(tmp_path, "run", "identities: {enabled: true, users: [nobody, gbtest-nosuchuser]}")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "no local user 'gbtest-nosuchuser'" in p.stderr and "identities.users" in p.stderr
    p = _run(tmp_path, "run", "conformance: {enabled: true, users: [nobody, gbtest-nosuch]}")
    assert p.returncode == 2 and "no local user 'gbtest-nosuch'" in p.stderr
