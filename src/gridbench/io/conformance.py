"""POSIX conformance with pjdfstest (the Rust rewrite of pjd-fstest): its configuration,
its command line, and its output parsed into one record per test case.

pjdfstest prints one line per test case, ``NAME ... ok|FAILED|skipped|failed as
expected|PASSED UNEXPECTEDLY``, followed by tab-indented lines: a skip's reasons, a
failure's panic message. A name is ``module::...::case``; the module is the syscall
(``chmod::...``), the seed's Table 4.7 rows; in 0.2.2 the errno cases live inside each
syscall's module (398 cases on Linux). Output is foreign: a line that is neither is
ignored, and a run with no test line at all is an error.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gridbench.errors import BackendError, GridbenchError, ResultsError
from gridbench.io.model_posix import SYSCALLS, ConformanceSpec

#: pjdfstest's verdict words → ours.
VERDICTS = {
    "ok": "passed",
    "FAILED": "failed",
    "skipped": "skipped",
    "failed as expected": "expected_failure",
    "PASSED UNEXPECTEDLY": "unexpected_pass",
}
_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9_:]+)\s+(?P<verdict>ok|FAILED|skipped|failed as expected|"
    r"PASSED UNEXPECTEDLY)\s*$"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
MAX_DETAIL = 500


def syscall_of(name: str) -> str:
    """The syscall category of a pjdfstest case name: its module (``chmod::...``), or
    ``other`` for a module that is not a syscall."""
    head = name.split("::", 1)[0]
    return head if head in SYSCALLS else "other"


def parse_output(text: str, where: str) -> list[dict[str, Any]]:
    """One record per test case: ``test``, ``syscall``, ``result`` (passed, failed,
    skipped, expected_failure, unexpected_pass) and ``detail`` (skip reasons or the
    failure message, cut to 500 characters)."""
    out: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        m = _LINE.match(line)
        if m:
            name = m["name"]
            out.append(
                {
                    "test": name,
                    "syscall": syscall_of(name),
                    "result": VERDICTS[m["verdict"]],
                    "detail": "",
                }
            )
        elif out and line.startswith("\t") and line.strip():
            cur = out[-1]
            joined = f"{cur['detail']}; {line.strip()}" if cur["detail"] else line.strip()
            cur["detail"] = joined[:MAX_DETAIL]
    if not out:
        raise ResultsError(
            "pjdfstest printed no test result",
            where=where,
            fix="run pjdfstest by hand in the target to see why (its output is kept in raw/)",
        )
    return out


def config_text(spec: ConformanceSpec, groups: Sequence[str]) -> str:
    """pjdfstest's TOML configuration: the features, the naptime and the two users to
    switch to (with their primary groups)."""
    feats = "".join(f"{f} = {{}}\n" for f in spec.features)
    users = ", ".join(f'["{u}", "{g}"]' for u, g in zip(spec.users, groups, strict=True))
    return (
        f"[features]\n{feats}\n[settings]\nnaptime = {spec.naptime}\nallow_remount = false\n"
        f"expected_failures = []\n\n[dummy_auth]\nentries = [{users}]\n"
    )


def primary_groups(users: Sequence[str], where: str) -> list[str]:
    """Each user's primary group name; an unknown user is a spec error."""
    import grp
    import pwd

    out = []
    for u in users:
        try:
            gid = pwd.getpwnam(u).pw_gid
        except KeyError:
            raise GridbenchError(
                f"no local user {u!r}",
                where=where,
                fix="name existing local users (getent passwd), or create them first",
            ) from None
        try:
            out.append(grp.getgrgid(gid).gr_name)
        except KeyError:
            out.append(str(gid))
    return out


def patterns(syscalls: Sequence[str]) -> list[str]:
    """pjdfstest's name filters for ``syscalls`` (none: every case). Its filter matches
    anywhere in a name (``truncate::`` also picks ``ftruncate::``): the parsed cases are
    filtered again by :func:`syscall_of`."""
    return [] if set(SYSCALLS) <= set(syscalls) else [f"{sc}::" for sc in syscalls]


def run_pjdfstest(
    binary: str, config: Path, workdir: Path, timeout: float, filters: Sequence[str] = ()
) -> str:
    """pjdfstest's stdout for one target (it exits 1 when a test failed: not an error)."""
    import shutil

    argv = [shutil.which(binary) or binary, "-c", str(config), "-p", str(workdir), *filters]
    try:
        p = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin", "RUST_BACKTRACE": "0"},
        )
    except FileNotFoundError:
        raise BackendError(
            f"pjdfstest not found: {binary}",
            where="conformance.pjdfstest",
            fix="install it with scripts/install-pjdfstest (cargo install pjdfstest "
            "--version 0.2.2), or give its path in conformance.pjdfstest",
        ) from None
    except subprocess.TimeoutExpired:
        raise BackendError(
            f"pjdfstest did not finish within {timeout:g} s",
            where=str(workdir),
            fix="raise conformance.timeout, or check the target answers",
        ) from None
    if p.returncode not in (0, 1):
        tail = (p.stderr or p.stdout).strip()[-400:]
        raise BackendError(
            f"pjdfstest exited with {p.returncode}: {tail}",
            where=" ".join(argv),
            fix="run the command by hand; the configuration is in the run's raw/ folder",
        )
    return p.stdout
