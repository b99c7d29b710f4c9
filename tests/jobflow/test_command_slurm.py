"""The command backend's slurm preset against live daemons (tests/slurm_cluster.py).

What every backend does (jobs end with their stage chain, a failing command, abort, open()
against an absent server) is tested once for all in test_backend_suite.py; here, what only
this preset has (quoting through sbatch --wrap, output, sbatch's refusal).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from gridbench.jobflow.backends.base import JobRequest, JobState, JobStatus
from gridbench.jobflow.backends.command.backend import CommandBackend
from slurm_cluster import SlurmCluster, slurm_fixture  # noqa: F401 (the fixture slurm)
from test_command_runner import failures, spec
from test_runner import events, run_spec


def options(cluster: SlurmCluster, workdir: Path, **over: Any) -> dict[str, Any]:
    return {"preset": "slurm", "env": cluster.env, "workdir": str(workdir), **over}


def test_slurm_preset_output_quoting_and_cancel(slurm: SlurmCluster, tmp_path: Path) -> None:
    """sbatch --wrap hands the job to /bin/sh on the node: {command_line} keeps the argv."""
    work = tmp_path / "work"
    work.mkdir()
    odd = "a  b; $(touch PWNED) `touch PWNED2` 'q'"

    async def main() -> tuple[dict[str, JobStatus], bytes, JobStatus]:
        b = CommandBackend.from_options(options(slurm, work))
        await b.open()
        try:
            ok = await b.submit(JobRequest("echo", ("/bin/echo", odd)))
            bad = await b.submit(JobRequest("bad", ("/bin/sh", "-c", "exit 3")))
            long = await b.submit(JobRequest("long", ("/bin/sleep", "300")))
            st: dict[str, JobStatus] = {}
            for _ in range(300):
                st = await b.status([ok, bad])
                if len(st) == 2 and all(s.state.terminal for s in st.values()):
                    break
                await asyncio.sleep(0.1)
            output = await b.fetch_output(ok)
            await b.cancel([long])
            cancelled = JobStatus(JobState.UNKNOWN)
            for _ in range(300):
                cancelled = (await b.status([long]))[long]
                if cancelled.state.terminal:
                    break
                await asyncio.sleep(0.1)
            return {"ok": st[ok], "bad": st[bad]}, output, cancelled
        finally:
            await b.close()

    st, output, cancelled = asyncio.run(main())
    assert st["ok"].state is JobState.DONE and st["ok"].message == "COMPLETED"
    assert st["bad"].state is JobState.FAILED and st["bad"].message == "FAILED"
    assert output == f"{odd}\n".encode()  # the node's shell saw one quoted argument
    assert not (work / "PWNED").exists() and not (work / "PWNED2").exists()
    assert cancelled.state is JobState.CANCELLED


def test_slurm_preset_submit_rejection_is_recorded(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = run_spec(
        spec(
            "cmd-slurm-rej",
            options(slurm, tmp_path, vars={"sbatch_args": ["--partition=nosuchpartition"]}),
            """
load: {model: open, rate: 10/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.2s, drain: 2s}
""",
        ),
        tmp_path / "results",
    )
    f = failures(events(out))
    assert f["kind"].to_list() == ["submit_rejected"] * 2
    assert all("sbatch exited with 1" in m and "partition" in m for m in f["message"].to_list())
    info = json.loads((out.run.trial_dir("p00-t00") / "trial.json").read_text())
    assert info["client_processes"]["by_op"]["submit"]["nonzero_exits"] == 2
