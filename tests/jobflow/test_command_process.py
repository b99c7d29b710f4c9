"""Client processes: their CPU and wall are counted, time-outs kill the whole group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from typing import Any

import psutil
import pytest

from gridbench.jobflow.backends.command.process import (
    ClientStartError,
    ClientTimeout,
    ProcessRunner,
)

PY = sys.executable
BURN = "import time\nt=time.process_time()\nwhile time.process_time()-t<{s}: pass\nprint('ok')"


def gone(pid: int, wait_s: float = 10.0) -> bool:
    """Whether ``pid`` is dead (or a zombie) within ``wait_s`` (polling, no timing claim)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_cpu_of_a_heavy_client_is_counted() -> None:
    async def main() -> tuple[float, dict[str, Any]]:
        r = ProcessRunner()
        res = await r.run("status", [PY, "-c", BURN.format(s=0.3)], timeout_s=60)
        assert res.stdout == b"ok\n" and res.exit_code == 0
        return res.cpu_s, r.cost.to_dict()

    cpu, cost = asyncio.run(main())
    assert cpu >= 0.29  # the child burnt 0.3 s of its own CPU time; rusage includes it
    assert cost["calls"] == 1 and cost["cpu_s"] == pytest.approx(cpu, abs=1e-5)
    by_op = cost["by_op"]
    assert isinstance(by_op, dict) and by_op["status"]["calls"] == 1
    assert cost["max_rss_bytes"] > 0


def test_counters_per_operation_and_window() -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        r = ProcessRunner()
        await r.run("submit", ["/bin/true"], timeout_s=10)
        await r.run("submit", ["/bin/false"], timeout_s=10)
        first = r.take_window()
        await r.run("cancel", ["/bin/echo", "x"], stdin=b"ignored", timeout_s=10)
        return first, r.take_window(), r.cost.to_dict()

    first, second, total = asyncio.run(main())
    assert first["calls"] == 2 and first["by_op"]["submit"]["nonzero_exits"] == 1
    assert second["calls"] == 1 and list(second["by_op"]) == ["cancel"]
    assert total["calls"] == 3 and set(total["by_op"]) == {"submit", "cancel"}


def test_stdin_is_fed_to_the_client() -> None:
    async def main() -> bytes:
        r = ProcessRunner()
        res = await r.run(
            "submit",
            [PY, "-c", "import sys; print(sys.stdin.read().upper())"],
            stdin=b"queue 1\n",
            timeout_s=30,
        )
        return res.stdout

    assert asyncio.run(main()) == b"QUEUE 1\n\n"


def test_timeout_kills_the_client_and_its_children(tmp_path: os.PathLike[str]) -> None:
    pidfile = os.path.join(tmp_path, "child.pid")
    script = (
        "import subprocess, time\n"
        f"p = subprocess.Popen(['/bin/sleep', '60'])\n"
        f"open({pidfile!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )

    async def main() -> dict[str, Any]:
        r = ProcessRunner()
        with pytest.raises(ClientTimeout) as exc:
            await r.run("submit", [PY, "-c", script], timeout_s=1.5)
        assert "did not exit within 1.5s" in str(exc.value)
        await r.close()
        return r.cost.to_dict()

    cost = asyncio.run(main())
    assert cost["by_op"]["submit"]["timeouts"] == 1
    assert cost["by_op"]["submit"]["calls"] == 1  # the killed client was still accounted
    with open(pidfile) as fh:
        assert gone(int(fh.read()))


def test_cancelled_call_kills_the_client_and_is_accounted() -> None:
    async def main() -> dict[str, Any]:
        r = ProcessRunner()
        task = asyncio.create_task(r.run("status", ["/bin/sleep", "60"], timeout_s=120))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await r.close()
        return r.cost.to_dict()

    cost = asyncio.run(main())
    assert cost["calls"] == 1 and cost["by_op"]["status"]["nonzero_exits"] == 1


def test_grandchild_holding_the_pipe_does_not_hold_the_call() -> None:
    # the client starts a detached job that inherits its stdout, prints the id and exits
    script = (
        "import subprocess\n"
        "p = subprocess.Popen(['/bin/sleep', '60'], start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
    )

    async def main() -> int:
        r = ProcessRunner()
        res = await r.run("submit", [PY, "-c", script], timeout_s=30)
        return int(res.stdout)

    pid = asyncio.run(main())  # returns although the sleep still holds the pipe open
    try:
        assert psutil.pid_exists(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_missing_program_is_a_start_error() -> None:
    async def main() -> dict[str, Any]:
        r = ProcessRunner()
        with pytest.raises(ClientStartError) as exc:
            await r.run("submit", ["/nonexistent/sbatch", "x"], timeout_s=5)
        assert "cannot start '/nonexistent/sbatch'" in str(exc.value)
        assert "No such file" in str(exc.value)
        return r.cost.to_dict()

    cost = asyncio.run(main())
    assert cost["calls"] == 0 and cost["by_op"]["submit"]["start_errors"] == 1


def test_parallel_clients_are_bounded() -> None:
    async def main() -> dict[str, Any]:
        r = ProcessRunner(max_processes=2)
        await asyncio.gather(
            *(r.run("status", ["/bin/sleep", "0.2"], timeout_s=30) for _ in range(6))
        )
        return r.cost.to_dict()

    cost = asyncio.run(main())
    assert cost["calls"] == 6 and cost["max_parallel"] == 2


def test_client_runs_in_its_workdir_and_own_session(tmp_path: os.PathLike[str]) -> None:
    # a workdir other than the current directory takes spawn_libc's chdir action
    code = "import os; print(os.getcwd()); print(os.getsid(0) == os.getpid())"
    script = os.path.join(tmp_path, "client.sh")
    with open(script, "w") as fh:
        fh.write("#!/bin/sh\necho relative\n")
    os.chmod(script, 0o755)

    async def main() -> tuple[bytes, bytes, bytes]:
        here = await ProcessRunner().run("status", [PY, "-c", code], timeout_s=30)
        r = ProcessRunner(cwd=str(tmp_path))
        there = await r.run("status", [PY, "-c", code], timeout_s=30)
        rel = await r.run("status", ["./client.sh"], timeout_s=30)  # found in the workdir
        return here.stdout, there.stdout, rel.stdout

    here, there, rel = asyncio.run(main())
    assert here.decode().split() == [os.getcwd(), "True"]
    assert there.decode().split() == [os.path.realpath(tmp_path), "True"]
    assert rel == b"relative\n"


def test_missing_workdir_is_a_start_error(tmp_path: os.PathLike[str]) -> None:
    async def main() -> dict[str, Any]:
        r = ProcessRunner(cwd=os.path.join(tmp_path, "gone"))
        with pytest.raises(ClientStartError, match="No such file"):
            await r.run("submit", ["/bin/true"], timeout_s=5)
        return r.cost.to_dict()

    assert asyncio.run(main())["by_op"]["submit"]["start_errors"] == 1


def test_output_is_capped_and_large_stdin_is_fed() -> None:
    code = (
        "import sys\n"
        "data = sys.stdin.buffer.read()\n"
        "sys.stdout.write('o' * 300000); sys.stderr.write(str(len(data)) + 'e' * 300000)"
    )

    async def main() -> tuple[bytes, bytes, int]:
        r = ProcessRunner(output_limit=1000)
        res = await r.run("submit", [PY, "-c", code], stdin=b"x" * 1_000_000, timeout_s=30)
        return res.stdout, res.stderr, res.exit_code

    out, err, rc = asyncio.run(main())
    assert rc == 0
    assert out == b"o" * 1000  # the rest was read and dropped: the client did not block
    assert err.startswith(b"1000000e") and len(err) == 1000


def test_client_that_ignores_its_stdin_is_not_an_error() -> None:
    async def main() -> int:
        r = ProcessRunner()
        res = await r.run("submit", ["/bin/true"], stdin=b"x" * 1_000_000, timeout_s=30)
        return res.exit_code

    assert asyncio.run(main()) == 0
