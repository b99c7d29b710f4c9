"""The command backend's arc preset against a live A-REX (tests/arc_site.py).

ARC's status lags (the infoprovider republishes about every 60 s, the fork LRMS notices a
job's end 10-16 s late), so a job is seen finished 15-75 s after submission. To keep the
test near a minute and a half, its three parts run at the same time, each with its own job
list: jobs that succeed through the runner, a job that fails through the runner, and
output plus cancel through the backend directly.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from arc_site import ArcSite, arc_fixture  # noqa: F401 (the fixture arc)
from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import JobRequest, JobState, JobStatus
from gridbench.jobflow.backends.command.backend import CommandBackend
from test_command_runner import failures, spec, trial_info
from test_runner import events, run_spec, stage_counts

pytestmark = pytest.mark.e2e

# The echo job's argument keeps spaces, ';', '|' and single quotes. Not '$' or backquotes:
# the fork LRMS writes each argument into its job script inside double quotes
# (/usr/share/arc/lrms_common.sh), so the CE's shell expands "$(...)" and "`...`"
# (observed with ARC 6.17; the job description is the user's own file: gridbench puts
# nothing of job.command into it).
ODD = "a  b; 'q' | c"
OK_XRSL = '&(executable="/bin/sh")(arguments="-c" "sleep 1")(jobname="gb-ok")'
FAIL_XRSL = '&(executable="/bin/sh")(arguments="-c" "exit 3")(jobname="gb-fail")'
ECHO_XRSL = f'&(executable="/bin/echo")(arguments="{ODD}")(stdout="out.txt")(jobname="gb-echo")'
LONG_XRSL = '&(executable="/bin/sleep")(arguments="300")(jobname="gb-long")'
RUN_BODY = """
load: {model: open, rate: 10/s}
trial: {jobs: %d}
timeouts: {status_interval: 2s, drain: 150s}
"""


def options(site: ArcSite, app: Path, joblist: Path, **over: Any) -> dict[str, Any]:
    return {
        "preset": "arc",
        "env": site.env,
        "workdir": str(app.parent),
        "vars": {"url": site.url, "app": str(app), "client_args": ["-j", str(joblist)]},
        **over,
    }


def write(path: Path, text: str) -> Path:
    path.write_text(text + "\n")
    return path


def test_arc_preset_submits_polls_fails_reads_output_and_cancels(
    arc: ArcSite, tmp_path: Path
) -> None:
    ok_app = write(tmp_path / "ok.xrsl", OK_XRSL)
    fail_app = write(tmp_path / "fail.xrsl", FAIL_XRSL)
    echo_app = write(tmp_path / "echo.xrsl", ECHO_XRSL)
    long_app = write(tmp_path / "long.xrsl", LONG_XRSL)

    def run_ok() -> Any:
        opts = options(arc, ok_app, tmp_path / "ok-jobs.dat")
        return run_spec(spec("cmd-arc", opts, RUN_BODY % 2), tmp_path / "results-ok")

    def run_fail() -> Any:
        opts = options(arc, fail_app, tmp_path / "fail-jobs.dat")
        return run_spec(spec("cmd-arc-fail", opts, RUN_BODY % 1), tmp_path / "results-fail")

    async def direct() -> tuple[JobStatus, bytes, JobStatus, JobStatus]:
        joblist = tmp_path / "direct-jobs.dat"
        b = CommandBackend.from_options(options(arc, echo_app, joblist))
        long_b = CommandBackend.from_options(options(arc, long_app, joblist))
        await b.open()
        await long_b.open()
        try:
            echo = await b.submit(JobRequest("echo", ("ignored",)))
            long = await long_b.submit(JobRequest("long", ("ignored",)))
            # waiting to see it running would cost another infoprovider cycle (~60 s)
            before = (await b.status([long]))[long]
            await b.cancel([long])
            st: dict[str, JobStatus] = {}
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:
                st = await b.status([echo, long])
                if len(st) == 2 and all(s.state.terminal for s in st.values()):
                    break
                await asyncio.sleep(2)
            output = await b.fetch_output(echo)
            return st.get(echo, JobStatus(JobState.UNKNOWN)), output, before, st[long]
        finally:
            await b.close()
            await long_b.close()

    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        ok_f, fail_f = pool.submit(run_ok), pool.submit(run_fail)
        echo_st, output, before, cancelled = asyncio.run(direct())
        out, bad = ok_f.result(), fail_f.result()
    elapsed = time.monotonic() - started

    # jobs that succeed, through the runner: one arcstat per sweep for all of them
    assert out.status == "complete"
    c = stage_counts(events(out))
    assert c["submit_ack"] == c["client_done"] == 2 and "failed" not in c, (c, elapsed)
    info = trial_info(out)
    cp = info["client_processes"]
    assert cp["by_op"]["submit"]["calls"] == 2  # two arcsub processes
    assert cp["by_op"]["status"]["calls"] == info["status_calls"] >= 1
    rt = out.run.read_experiment()["backend_runtime"]["command"]
    assert rt["preset"] == "arc" and rt["tested"] is True
    assert rt["client_processes_at_open"]["by_op"]["init"]["calls"] == 1  # arcproxy -i

    # a job exiting 3 is a job failure with A-REX's own message
    f = failures(events(bad))
    assert f["kind"].to_list() == ["job_failed"], f
    assert "wrong exit code - 3 != 0" in f["message"].to_list()[0]

    # output through arccat, and cancel through arckill
    assert echo_st.state is JobState.DONE and echo_st.exit_code == 0, echo_st
    assert output == f"{ODD}\n".encode()  # xRSL passed the argument as one, no shell
    assert before.state in (JobState.QUEUED, JobState.RUNNING), before  # "Accepted" at first
    assert cancelled.state is JobState.CANCELLED, cancelled
    assert cancelled.message == "Job is canceled by external request"  # arcstat's Job Error


def test_arc_preset_init_needs_a_proxy(arc: ArcSite, tmp_path: Path) -> None:
    app = write(tmp_path / "ok.xrsl", OK_XRSL)
    env = {**arc.env, "X509_USER_PROXY": str(tmp_path / "no-proxy.pem")}
    b = CommandBackend.from_options({**options(arc, app, tmp_path / "jobs.dat"), "env": env})
    with pytest.raises(BackendError) as exc:
        asyncio.run(b.open())
    assert "init (arcproxy) exited with 1" in str(exc.value)
    assert "no-proxy.pem" in str(exc.value)
