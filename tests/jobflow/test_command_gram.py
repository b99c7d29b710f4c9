"""The command backend's gram preset against a live GRAM5 gatekeeper (tests/gram_site.py).

Jobs go through globus-job-submit to the fork job manager, which runs them as the
throw-away account the user's DN is mapped to; the credential is the proxy the site made,
handed to the clients through ``X509_USER_PROXY`` in the backend's ``env``.
"""

from __future__ import annotations

import asyncio
import json
import pwd
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gram_site import GramSite, gram_fixture  # noqa: F401 (the fixture gram)
from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import JobRequest, JobState, JobStatus, SubmitError
from gridbench.jobflow.backends.command.backend import CommandBackend
from gridbench.jobflow.backends.command.options import compile_options
from gridbench.jobflow.backends.command.parse import parse_one
from test_command_runner import failures, spec, trial_info
from test_runner import events, run_spec, stage_counts

pytestmark = pytest.mark.e2e

GRAM_ID = re.compile(r"gramid=(/\d+/\d+/)")


def options(site: GramSite, workdir: Path, **over: Any) -> dict[str, Any]:
    return {
        "preset": "gram",
        "vars": {"url": site.contact},
        "env": site.env,
        "workdir": str(workdir),
        **over,
    }


def submitted_to_lrm(site: GramSite) -> set[str]:
    """Job-manager ids (``/N/N/``) the job manager's log says it handed to the fork LRM."""
    if not site.job_manager_log.exists():
        return set()
    lines = site.job_manager_log.read_text().splitlines()
    return {
        m.group(1)
        for ln in lines
        if 'msg="job submitted to lrm"' in ln and (m := GRAM_ID.search(ln))
    }


def test_gram_preset_runs_and_fails_jobs_through_the_runner(gram: GramSite, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    before = submitted_to_lrm(gram)
    out = run_spec(
        spec(
            "cmd-gram",
            options(gram, work),
            """
job: {command: [/bin/sleep, "0.5"]}
load: {model: open, rate: 10/s}
trial: {jobs: 4}
timeouts: {status_interval: 0.3s, drain: 40s}
""",
        ),
        tmp_path / "results",
    )
    assert out.status == "complete"
    ev = events(out)
    c = stage_counts(ev)
    assert c["submit_ack"] == c["client_done"] == 4 and "failed" not in c, c
    info = trial_info(out)
    cp = info["client_processes"]
    assert cp["by_op"]["submit"]["calls"] == 4  # four globus-job-submit processes
    assert cp["by_op"]["submit"]["start_errors"] == cp["by_op"]["submit"]["timeouts"] == 0
    # globus-job-status takes one contact: at least one call per job, none failing
    assert cp["by_op"]["status"]["calls"] >= 4
    assert cp["by_op"]["status"]["nonzero_exits"] == 0
    runtime = out.run.read_experiment()["backend_runtime"]["command"]
    assert runtime["preset"] == "gram" and runtime["tested"] is True
    assert runtime["status_mode"] == "single"
    # the job manager handed exactly these four jobs to the fork LRM
    assert len(submitted_to_lrm(gram) - before) == 4

    bad = run_spec(
        spec(
            "cmd-gram-fail",
            options(gram, work),
            """
job: {command: [/nonexistent/program]}
load: {model: open, rate: 10/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.3s, drain: 40s}
""",
        ),
        tmp_path / "results2",
    )
    f = failures(events(bad))
    assert f["kind"].to_list() == ["job_failed", "job_failed"]
    assert f["message"].to_list() == ["FAILED", "FAILED"]  # globus-job-status said FAILED


def test_gram_preset_output_quoting_cancel_and_rejection(gram: GramSite, tmp_path: Path) -> None:
    """Argv reaches the job intact (no shell on either side); output comes back through
    globus-job-get-output; a cancelled job reads FAILED and its process is gone."""
    odd = ("a  b", "`touch PWNED`", "'q'", '"dq"', "x;y", "back\\slash", "$HOME")

    async def main() -> dict[str, Any]:
        b = CommandBackend.from_options(options(gram, tmp_path))
        await b.open()
        try:
            ids = {
                "echo": await b.submit(JobRequest("echo", ("/usr/bin/printf", "[%s]\\n", *odd))),
                "who": await b.submit(JobRequest("who", ("/usr/bin/id", "-un"))),
                "exit3": await b.submit(JobRequest("exit3", ("/bin/sh", "-c", "exit 3"))),
                "missing": await b.submit(JobRequest("missing", ("/nonexistent/program",))),
            }
            long = await b.submit(JobRequest("long", ("/bin/sleep", "300")))
            st: dict[str, JobStatus] = {}
            for _ in range(200):
                st = await b.status(list(ids.values()))
                if len(st) == len(ids) and all(s.state.terminal for s in st.values()):
                    break
                await asyncio.sleep(0.2)
            running = (await b.status([long]))[long]
            sleeping = [c for c in map(_cmdline, gram.user_pids()) if c[:1] == ["/bin/sleep"]]
            outputs = {k: await b.fetch_output(ids[k]) for k in ("echo", "who")}
            await b.cancel([long])
            cancelled = JobStatus(JobState.UNKNOWN)
            for _ in range(100):
                cancelled = (await b.status([long]))[long]
                if cancelled.state.terminal:
                    break
                await asyncio.sleep(0.2)
            # an argument with "$(...)" is an RSL substitution to globus-job-submit (never a
            # shell): an unknown one fails the submission
            with pytest.raises(SubmitError) as exc:
                await b.submit(JobRequest("rsl", ("/bin/echo", "$(touch PWNED)")))
            return {
                "st": {k: st[v] for k, v in ids.items()},
                "running": running,
                "sleeping": sleeping,
                "outputs": outputs,
                "cancelled": cancelled,
                "rejected": exc.value,
                "cost": b.client_cost(),
            }
        finally:
            await b.close()

    r = asyncio.run(main())
    st = r["st"]
    assert st["echo"] == JobStatus(JobState.DONE, "DONE")
    assert st["missing"] == JobStatus(JobState.FAILED, "FAILED")
    # The fork job manager polls the process table and learns no exit codes: a job that
    # exits 3 is DONE with no exit code (with one, the preset would report it failed).
    assert st["exit3"] == JobStatus(JobState.DONE, "DONE")
    assert r["running"].state is JobState.RUNNING and r["running"].message == "ACTIVE"
    assert r["outputs"]["echo"] == "".join(f"[{a}]\n" for a in odd).encode()
    assert r["outputs"]["who"] == f"{gram.user}\n".encode()  # ran as the mapped account
    assert r["cancelled"] == JobStatus(JobState.FAILED, "FAILED")
    # the job ran as a process of the account, and cancelling it killed that process
    assert r["sleeping"] == [["/bin/sleep", "300", ""]], r["sleeping"]
    cmdlines = [_cmdline(p) for p in gram.user_pids()]
    assert not [c for c in cmdlines if c[:1] == ["/bin/sleep"]], cmdlines
    rsl = r["rejected"]
    assert rsl.kind == "submit_rejected" and "error code 39" in rsl.message, rsl.message
    home = Path(pwd.getpwnam(gram.user).pw_dir)
    assert not list(home.glob("PWNED*")) and not list(tmp_path.glob("PWNED*"))
    by_op = r["cost"]["by_op"]
    assert by_op["init"]["calls"] == 1 and by_op["output"]["calls"] == 2


def test_gram_preset_rejections_and_a_short_proxy(gram: GramSite, tmp_path: Path) -> None:
    """A wrong service is a rejected submission with GRAM's message; a proxy with less
    than the 3 h globus-job-submit demands stops the backend at open()."""
    bad_url = gram.contact.replace("jobmanager-fork", "jobmanager-nosuch")
    out = run_spec(
        spec(
            "cmd-gram-rej",
            options(gram, tmp_path, vars={"url": bad_url}),
            """
job: {command: [/bin/true]}
load: {model: open, rate: 10/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.3s, drain: 2s}
""",
        ),
        tmp_path / "results",
    )
    f = failures(events(out))
    assert f["kind"].to_list() == ["submit_rejected"] * 2
    assert all(
        "exited with 93" in m and "failed to find the requested service" in m
        for m in f["message"].to_list()
    ), f["message"].to_list()
    info = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    assert info["client_processes"]["by_op"]["submit"]["nonzero_exits"] == 2

    short = tmp_path / "short-proxy.pem"
    subprocess.run(
        [
            "grid-proxy-init", "-rfc", "-q", "-valid", "1:00",
            "-cert", str(gram.root / "usercert.pem"), "-key", str(gram.root / "userkey.pem"),
            "-out", str(short),
        ],
        env={"PATH": "/usr/bin:/bin", **gram.env},
        check=True,
        capture_output=True,
        timeout=30,
    )  # fmt: skip

    async def open_with_short_proxy() -> None:
        env = {**gram.env, "X509_USER_PROXY": str(short)}
        b = CommandBackend.from_options(options(gram, tmp_path, env=env))
        try:
            await b.open()
        finally:
            await b.close()

    with pytest.raises(BackendError) as exc:
        asyncio.run(open_with_short_proxy())
    assert "init (grid-proxy-info) exited with 1" in str(exc.value), str(exc.value)


def test_gram_status_pattern_reads_an_exit_code() -> None:
    """globusrun -status prints "exit code: N" after DONE when the job manager knows it
    (globusrun.c, GCT 6.2; not the fork job manager with polling, so not seen live)."""
    cfg = compile_options({"preset": "gram", "vars": {"url": "ce:2119/jobmanager-pbs"}})
    op = cfg.ops["status"]
    assert op.mode == "single" and op.pattern is not None
    assert parse_one(op.pattern, "DONE\nexit code: 3\n", cfg.states) == JobStatus(
        JobState.FAILED, "DONE, exit code 3", 3
    )
    assert parse_one(op.pattern, "DONE\nexit code: 0\n", cfg.states) == JobStatus(
        JobState.DONE, "DONE", 0
    )
    assert parse_one(op.pattern, "PENDING\n", cfg.states).state is JobState.QUEUED


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []
