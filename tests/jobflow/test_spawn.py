"""The client-program runner (backends/spawn.py and cli_run.run_cli) with real processes.

Both paths of ``run_cli`` (posix_spawn + pidfd, and asyncio's subprocess fallback used
for other users) must behave the same, so most tests run against both.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gridbench.jobflow.backends import cli_run, spawn

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


@pytest.fixture(params=["posix_spawn", "asyncio"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run each test through one of run_cli's two paths."""
    if request.param == "asyncio":
        monkeypatch.setattr(spawn, "available", lambda: False)
    else:
        assert spawn.available(), "posix_spawn and pidfd_open should work on this kernel"
    yield request.param


def run(
    argv: list[str], env: dict[str, str] | None = None, timeout: float = 30
) -> cli_run.CliResult:
    return asyncio.run(cli_run.run_cli(argv, env or ENV, timeout))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_output_streams_and_exit_code(path: str) -> None:
    r = run([PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert (r.rc, r.out, r.err) == (3, "out\n", "err\n")


def test_megabytes_on_both_streams_at_once(path: str) -> None:
    code = (
        "import sys\n"
        "for _ in range(64):\n sys.stdout.write('o' * 16384); sys.stderr.write('e' * 16384)"
    )
    r = run([PY, "-c", code])
    assert r.rc == 0
    assert len(r.out) == len(r.err) == 64 * 16384
    assert set(r.out) == {"o"} and set(r.err) == {"e"}


def test_argv_is_passed_verbatim_and_stdin_is_empty(path: str) -> None:
    hostile = ["a b", "; rm -rf /", "$(touch x)", "`id`", "'\"", "*"]
    echo = "import sys, json; print(json.dumps([sys.argv[1:], sys.stdin.read()]))"
    r = run([PY, "-c", echo, *hostile])
    assert r.rc == 0
    assert json.loads(r.out) == [hostile, ""]


def test_child_sees_exactly_the_env_given(path: str) -> None:
    env = {**ENV, "GB_MARK": "yes"}
    r = run([PY, "-c", "import os, json; print(json.dumps(dict(os.environ)))"], env=env)
    seen = json.loads(r.out)
    seen.pop("LC_CTYPE", None)  # Python may add it for the C locale coercion
    assert seen == env


def test_program_is_found_on_the_childs_path(path: str, tmp_path: Path) -> None:
    tool = tmp_path / "gb-only-here"
    tool.write_text(f"#!{PY}\nprint('found')\n")
    tool.chmod(0o755)
    r = run(["gb-only-here"], env={**ENV, "PATH": f"{tmp_path}:{ENV['PATH']}"})
    assert (r.rc, r.out) == (0, "found\n")
    with pytest.raises(FileNotFoundError):
        run(["gb-only-here"])


def test_missing_or_unrunnable_program_is_an_oserror(path: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run(["/nonexistent/gb-no-such-program"])
    not_exec = tmp_path / "plain"
    not_exec.write_text("data")
    with pytest.raises(PermissionError):
        run([str(not_exec)])


def test_death_by_signal_is_a_negative_code(path: str) -> None:
    r = run([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert r.rc == -signal.SIGTERM


def test_sigpipe_has_its_default_action_in_the_child(path: str) -> None:
    # Python ignores SIGPIPE; a CLI client must not inherit that (it would spin on EPIPE)
    r = run(["cat", "/proc/self/status"])
    ignored = int(next(ln for ln in r.out.splitlines() if ln.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))


def test_time_out_kills_the_child_and_leaks_nothing(path: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    before = _open_fds()
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        run([PY, "-c", code], timeout=1.0)
    assert time.monotonic() - t0 < 10
    pid = int(pidfile.read_text())
    assert _gone(pid), "the timed-out child must be killed and reaped"
    assert _open_fds() == before


def test_cancellation_kills_the_child(path: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"

    async def main() -> None:
        task = asyncio.create_task(cli_run.run_cli([PY, "-c", code], ENV, 60))
        for _ in range(200):
            await asyncio.sleep(0.05)
            if pidfile.exists() and pidfile.read_text():
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _gone(int(pidfile.read_text()))


def test_many_concurrent_calls_leak_no_descriptors(path: str) -> None:
    before = _open_fds()

    async def main() -> list[cli_run.CliResult]:
        return await asyncio.gather(
            *(cli_run.run_cli(["echo", str(i)], ENV, 30) for i in range(64))
        )

    results = asyncio.run(main())
    assert [r.out for r in results] == [f"{i}\n" for i in range(64)]
    assert _open_fds() == before


def test_submit_call_maps_a_missing_program_and_a_time_out() -> None:
    from gridbench.jobflow.backends.base import SubmitError
    from gridbench.jobflow.events.model import FAIL_SUBMIT_ERROR, FAIL_SUBMIT_TIMEOUT

    async def call(argv: list[str], timeout: float) -> cli_run.CliResult:
        return await cli_run.submit_call(cli_run.run_cli(argv, ENV, timeout), argv[0], timeout)

    with pytest.raises(SubmitError) as missing:
        asyncio.run(call(["gb-no-such-sbatch"], 5))
    assert missing.value.kind == FAIL_SUBMIT_ERROR
    assert "gb-no-such-sbatch" in str(missing.value)
    with pytest.raises(SubmitError) as slow:
        asyncio.run(call(["sleep", "30"], 0.5))
    assert slow.value.kind == FAIL_SUBMIT_TIMEOUT


def test_a_grandchild_holding_the_output_does_not_hold_the_call(tmp_path: Path) -> None:
    """sbatch-like: prints the id, exits 0, but leaves a process holding stdout. The call
    ends shortly after the exit with what was printed (not at the time-out)."""
    assert spawn.available()
    code = (
        "import subprocess, sys; print('Submitted batch job 42', flush=True); "
        "subprocess.Popen(['sleep', '31.5'])"
    )
    t0 = time.monotonic()
    r = run([PY, "-c", code], timeout=20)
    assert (r.rc, r.out) == (0, "Submitted batch job 42\n")
    assert time.monotonic() - t0 < 10
    subprocess.run(["pkill", "-f", "^sleep 31.5$"], check=False)


def test_the_parents_descriptors_are_not_inherited(path: str) -> None:
    r_fd, w_fd = os.pipe()
    os.set_inheritable(w_fd, True)  # as a launcher may hand one down
    try:
        r = run(["ls", "/proc/self/fd"])
    finally:
        os.close(r_fd)
        os.close(w_fd)
    seen = {int(x) for x in r.out.split()}
    assert w_fd not in seen
    assert seen <= {0, 1, 2, 3}  # 3: ls's own listing of the directory


def test_cancel_during_the_kill_grace_still_cancels(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A child that does not die at once (SIGKILL not delivered: a process stuck in the
    kernel) must not swallow the caller's cancellation."""
    assert spawn.available()
    monkeypatch.setattr(spawn.signal, "pidfd_send_signal", lambda *a: None)
    monkeypatch.setattr(spawn, "_KILL_GRACE_S", 30.0)
    pidfile = tmp_path / "pid"
    code = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"

    async def main() -> None:
        task = asyncio.create_task(cli_run.run_cli([PY, "-c", code], ENV, 0.5))
        await asyncio.sleep(1.5)  # timed out at 0.5 s, now waiting for the kill to work
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)

    try:
        asyncio.run(main())
        pid = int(pidfile.read_text())
        assert pid in spawn._orphans  # reaped by a later call once it goes
    finally:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
    asyncio.run(cli_run.run_cli(["true"], ENV, 10))  # a later call reaps it
    for _ in range(50):
        if not spawn._orphans:
            break
        time.sleep(0.05)
        asyncio.run(cli_run.run_cli(["true"], ENV, 10))
    assert not spawn._orphans
    assert _gone(pid)
