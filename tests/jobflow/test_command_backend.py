"""The command backend against the demo CLI (real processes and files, no scheduler)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import JobRequest, JobState, JobStatus, SubmitError
from gridbench.jobflow.backends.command.backend import CommandBackend

T = TypeVar("T")
DEMO = ["{python}", "-m", "gridbench.jobflow.backends.command.demo", "--state-dir={state_dir}"]


def demo(state: Path, **over: Any) -> dict[str, Any]:
    return {"preset": "demo", "vars": {"state_dir": str(state)}, **over}


def run(options: dict[str, Any], body: Callable[[CommandBackend], Awaitable[T]]) -> T:
    async def main() -> T:
        b = CommandBackend.from_options(options)
        await b.open()
        try:
            return await body(b)
        finally:
            await b.close()

    return asyncio.run(main())


async def until_ended(b: CommandBackend, ids: list[str]) -> dict[str, JobStatus]:
    for _ in range(200):
        st = await b.status(ids)
        if len(st) == len(ids) and all(s.state.terminal for s in st.values()):
            return st
        await asyncio.sleep(0.1)
    raise AssertionError(f"jobs did not end: {st}")


def calls(b: CommandBackend, op: str) -> int:
    by_op: dict[str, dict[str, int]] = b.client_cost()["by_op"]
    return by_op.get(op, {}).get("calls", 0)


def job(name: str, *argv: str) -> JobRequest:
    return JobRequest(name, tuple(argv))


def test_job_flow_with_batched_status(tmp_path: Path) -> None:
    async def body(b: CommandBackend) -> None:
        ids = [
            await b.submit(job("ok", "/bin/echo", "hello world")),
            await b.submit(job("bad", sys.executable, "-c", "import sys; sys.exit(3)")),
            await b.submit(job("slow", "/bin/sleep", "0.3")),
        ]
        assert len(set(ids)) == 3
        before = calls(b, "status")
        st = await until_ended(b, ids)
        sweeps = calls(b, "status") - before
        assert st[ids[0]] == JobStatus(JobState.DONE, "COMPLETED", 0)
        assert st[ids[1]] == JobStatus(JobState.FAILED, "FAILED, exit code 3", 3)
        assert st[ids[2]].state is JobState.DONE
        assert sweeps >= 1 and calls(b, "status") == before + sweeps  # one call per sweep
        assert await b.fetch_output(ids[0]) == b"hello world\n"
        assert await b.queue_length() == 0
        assert calls(b, "init") == 1 and calls(b, "submit") == 3

    run(demo(tmp_path), body)


def test_ids_joined_into_one_argument(tmp_path: Path) -> None:
    opts = demo(tmp_path, status={"argv": [*DEMO, "status", "{ids}"], "ids_join": ","})

    async def body(b: CommandBackend) -> None:
        ids = [await b.submit(job(f"j{i}", "/bin/true")) for i in range(4)]
        st = await until_ended(b, ids)
        assert {s.state for s in st.values()} == {JobState.DONE}

    run(opts, body)


def test_status_per_job_when_the_cli_takes_one_id(tmp_path: Path) -> None:
    opts = demo(
        tmp_path,
        status={
            "argv": [*DEMO, "status", "{id}"],
            "pattern": r"^\S+ (?P<state>[A-Z]+) (?P<exit_code>\S+)$",
            "parallel": 2,
        },
    )

    async def body(b: CommandBackend) -> None:
        assert not b.capabilities().batch_status
        ids = [await b.submit(job(f"j{i}", "/bin/true")) for i in range(3)]
        before = calls(b, "status")
        st = await b.status(ids)
        assert len(st) == 3 and calls(b, "status") == before + 3
        await until_ended(b, ids)

    run(opts, body)


def test_listing_all_jobs_then_asking_finished_for_the_ones_that_left(tmp_path: Path) -> None:
    """SGE-style: the status listing shows only live jobs; ``finished`` asks about the rest."""
    opts = demo(
        tmp_path,
        status={"argv": [*DEMO, "queue"], "pattern": r"^(?P<id>[0-9a-f]+)(?P<state>)$"},
        finished={
            "argv": [*DEMO, "status", "{id}"],
            "pattern": r"^\S+ (?P<state>[A-Z]+) (?P<exit_code>\S+)$",
        },
        states={"": "running"},
    )

    async def body(b: CommandBackend) -> None:
        assert b.cfg.ops["status"].mode == "all"
        a = await b.submit(job("a", "/bin/sleep", "30"))
        c = await b.submit(job("c", sys.executable, "-c", "raise SystemExit(2)"))
        st = await until_finished(b, [c])
        assert st[c] == JobStatus(JobState.FAILED, "FAILED, exit code 2", 2)
        assert (await b.status([a]))[a].state is JobState.RUNNING
        await b.cancel([a])

    async def until_finished(b: CommandBackend, ids: list[str]) -> dict[str, JobStatus]:
        for _ in range(200):
            st = await b.status(ids)
            if all(i in st and st[i].state.terminal for i in ids):
                return st
            await asyncio.sleep(0.1)
        raise AssertionError("did not finish")

    run(opts, body)


def test_missing_state_for_jobs_the_listing_forgot(tmp_path: Path) -> None:
    opts = demo(
        tmp_path,
        status={
            "argv": [*DEMO, "queue"],
            "pattern": r"^(?P<id>[0-9a-f]+)(?P<state>)$",
            "missing": "done",
        },
        states={"": "running"},
    )

    async def body(b: CommandBackend) -> None:
        i = await b.submit(job("a", "/bin/true"))
        st = await until_ended(b, [i])
        assert st[i] == JobStatus(JobState.DONE, "no longer listed by the status command")

    run(opts, body)


def test_unknown_ids_are_omitted_or_an_error(tmp_path: Path) -> None:
    async def body(b: CommandBackend) -> dict[str, JobStatus]:
        return await b.status(["0123456789ab"])

    assert run(demo(tmp_path), body) == {}  # the demo says "unknown job id": nothing known
    with pytest.raises(BackendError) as exc:
        run(demo(tmp_path, status={"unknown_pattern": None}), body)
    msg = str(exc.value)
    assert "template status" in msg and "exited with 1" in msg and "unknown job id" in msg
    assert "ok_codes" in msg


def test_status_pattern_that_never_matches(tmp_path: Path) -> None:
    opts = demo(tmp_path, status={"pattern": r"^JOB (?P<id>\d+) IS (?P<state>\w+)$"})

    async def body(b: CommandBackend) -> None:
        i = await b.submit(job("a", "/bin/true"))
        await b.status([i])

    with pytest.raises(BackendError) as exc:
        run(opts, body)
    msg = str(exc.value)
    assert "preset demo" in msg and "template status" in msg
    assert "JOB (?P<id>" in msg and "did not match" in msg
    assert "PENDING" in msg or "RUNNING" in msg or "COMPLETED" in msg  # the output snippet
    assert "status.ignore" in msg


def test_submit_failures_are_submit_errors_with_kinds(tmp_path: Path) -> None:
    async def body(b: CommandBackend) -> SubmitError:
        with pytest.raises(SubmitError) as exc:
            await b.submit(job("a", "/bin/true"))
        return exc.value

    e = run(demo(tmp_path, submit={"pattern": r"^Job (?P<id>\d+) queued$"}), body)
    assert e.kind == "submit_error"
    assert "submit template" in e.message and "^Job (?P<id>" in e.message
    assert "Submitted demo job" in e.message  # a snippet of what the CLI printed
    e = run(demo(tmp_path, submit={"argv": [*DEMO, "submit"]}), body)  # no program: exit 2
    assert e.kind == "submit_rejected" and "exited with 2" in e.message
    assert "no program given" in e.message
    slow = {
        "preset": "demo",
        "init": None,
        "vars": {"state_dir": str(tmp_path), "client_args": ["--delay", "5"]},
        "submit": {"timeout_s": 0.5},
    }
    e = run(slow, body)
    assert e.kind == "submit_timeout" and "did not exit within 0.5s" in e.message


def test_missing_program_is_reported_at_open_or_per_submit(tmp_path: Path) -> None:
    opts = demo(
        tmp_path,
        submit={"argv": ["/nonexistent/sbatch", "{name}"]},
        cancel=["no-such-scancel-here", "{ids}"],
    )
    with pytest.raises(BackendError) as exc:
        run(opts, lambda b: asyncio.sleep(0))
    msg = str(exc.value)
    assert "client program not found" in msg
    assert "'/nonexistent/sbatch' (submit)" in msg and "'no-such-scancel-here' (cancel)" in msg
    assert "PATH" in msg and "check_executables" in msg

    async def body(b: CommandBackend) -> SubmitError:
        with pytest.raises(SubmitError) as e:
            await b.submit(job("a", "/bin/true"))
        return e.value

    e = run({**opts, "check_executables": False}, body)
    assert e.kind == "submit_error"
    assert "cannot start '/nonexistent/sbatch'" in e.message and "No such file" in e.message


def test_init_failure_is_a_backend_error_with_a_fix(tmp_path: Path) -> None:
    opts = demo(tmp_path, init=[sys.executable, "-c", "import sys; sys.exit('no valid proxy')"])
    with pytest.raises(BackendError) as exc:
        run(opts, lambda b: asyncio.sleep(0))
    msg = str(exc.value)
    assert "template init" in msg and "exited with 1" in msg and "no valid proxy" in msg
    assert "run it by hand" in msg and "never types passwords" in msg


def test_cancel_ends_running_jobs(tmp_path: Path) -> None:
    async def body(b: CommandBackend) -> None:
        ids = [await b.submit(job(f"s{i}", "/bin/sleep", "60")) for i in range(2)]
        await b.cancel(ids)
        st = await until_ended(b, ids)
        assert {s.state for s in st.values()} == {JobState.CANCELLED}
        assert calls(b, "cancel") == 1  # one scancel-style call for both

    run(demo(tmp_path), body)

    async def failing(b: CommandBackend) -> None:
        await b.cancel(["0123456789ab"])

    with pytest.raises(BackendError, match=r"1 of 1 cancel calls failed.*unknown job id"):
        run(demo(tmp_path), failing)


def test_heavy_client_cost_and_runtime_stats(tmp_path: Path) -> None:
    opts = demo(tmp_path)
    opts["vars"]["client_args"] = ["--burn", "0.2"]

    async def body(b: CommandBackend) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        b.runtime_stats()  # drop the init call from the window
        await b.submit(job("a", "/bin/true"))
        return b.runtime_stats(), b.client_cost(), b.runtime_info()

    window, total, info = run(opts, body)
    cp = window["client_processes"]
    assert cp["calls"] == 1 and set(cp["by_op"]) == {"submit"}
    assert cp["by_op"]["submit"]["cpu_s"] >= 0.19  # the client burnt 0.2 s of CPU
    assert total["calls"] == 2 and total["by_op"]["init"]["cpu_s"] >= 0.19
    assert total["cpu_s"] >= 0.38
    cmd = info["command"]
    assert cmd["preset"] == "demo" and cmd["tested"] is True
    assert cmd["status_mode"] == "batch" and cmd["templates"]["cancel"][-2:] == ["cancel", "{ids}"]


def test_stdin_templates_carry_the_job_to_the_client(tmp_path: Path) -> None:
    """UNICORE-style: the job JSON goes to the client's stdin, built from JSON placeholders."""
    fake_ucc = (
        "import json, sys\n"
        "job = json.load(sys.stdin)\n"
        "json.dump(job, open(sys.argv[1], 'w'))\n"
        "print('Reading job from stdin:')\n"
        "print('https://unicore.example.org:8080/SITE/rest/core/jobs/abc-123')\n"
    )
    seen = tmp_path / "job.json"
    opts = {
        "preset": "unicore",
        "init": None,
        "check_executables": False,
        "submit": {"argv": [sys.executable, "-c", fake_ucc, str(seen)]},
    }
    odd = ["/bin/echo", 'say "hi"', "a\\b", "$(x)"]

    async def body(b: CommandBackend) -> str:
        return await b.submit(JobRequest("p00-t00-000001", tuple(odd)))

    assert run(opts, body) == "https://unicore.example.org:8080/SITE/rest/core/jobs/abc-123"
    job_json = json.loads(seen.read_text())
    assert job_json == {"Executable": "/bin/echo", "Arguments": odd[1:], "Name": "p00-t00-000001"}


def test_script_on_stdin_keeps_the_argv(tmp_path: Path) -> None:
    """PBS-style: a shell script on stdin; {command_line} quotes the argv for that shell."""
    fake_qsub = "import sys\nopen(sys.argv[1], 'w').write(sys.stdin.read())\nprint('42.server')\n"
    script = tmp_path / "script.sh"
    opts = demo(
        tmp_path,
        submit={
            "argv": [sys.executable, "-c", fake_qsub, str(script)],
            "stdin": "#!/bin/sh\n{command_line}\n",
            "pattern": r"^(?P<id>\d+\.\S+)",
        },
    )
    odd = ("/bin/echo", "a b", "it's", "$(touch x)")

    async def body(b: CommandBackend) -> str:
        return await b.submit(JobRequest("j", odd))

    assert run(opts, body) == "42.server"
    text = script.read_text()
    assert text == "#!/bin/sh\n/bin/echo 'a b' 'it'\"'\"'s' '$(touch x)'\n"
    # run by a real shell (as the batch system would), the script gives back the exact argv
    out = subprocess.run(["/bin/sh", str(script)], capture_output=True, text=True, check=True)
    assert out.stdout == "a b it's $(touch x)\n"
    assert not (tmp_path / "x").exists()


def test_submit_template_sees_the_users_account_and_credential(tmp_path: Path) -> None:
    """Per-user placeholders reach the submit argv as separate, inert items."""
    seen = tmp_path / "argv.jsonl"
    record = (
        "import json,sys; open(sys.argv[1],'a').write(json.dumps(sys.argv[2:])+'\\n');"
        "print('id-' + sys.argv[2])"
    )
    options = {
        "submit": {
            "argv": [
                "{python}",
                "-c",
                record,
                str(seen),
                "{user}",
                "{account}",
                "{credential_file}",
                "{credential_env}",
            ],
            "pattern": r"id-(\S+)",
        },
        "status": {
            "argv": ["{python}", "-c", "print('')", "{ids}"],
            "pattern": r"(?P<id>\S+) (?P<state>\S+)",
        },
        "states": {"DONE": "done"},
    }
    jobs = [
        JobRequest(
            "j1",
            ("true",),
            user="alice",
            account="al; rm -rf /",
            credential={"file": "/tmp/a b.pem"},
        ),
        JobRequest("j2", ("true",), user="bob", credential={"env": "BOB_TOKEN"}),
    ]

    async def body(b: CommandBackend) -> list[str]:
        return [await b.submit(j) for j in jobs]

    assert run(options, body) == ["alice", "bob"]  # group 1 of the pattern
    argvs = [json.loads(x) for x in seen.read_text().splitlines()]
    assert argvs == [
        ["alice", "al; rm -rf /", "/tmp/a b.pem", ""],
        ["bob", "", "", "BOB_TOKEN"],
    ]
