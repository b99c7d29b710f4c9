"""GRAM with its data through GridFTP, live (issue 23): each job's input is uploaded by
globus-url-copy to the suite's GridFTP server before submit (the command backend's timed
``upload``), the GRAM job (fork job manager, the mapped account) reads it from the
server's storage and writes its output there, and the output is downloaded by
globus-url-copy (``download``). The GridFTP server's transfer log is read as stamps
(``stamps: {use: [gram, gridftp]}``), joined by the job's name (its files' directory), so
one chain runs client upload → GridFTP STOR → GRAM stages → client done → GridFTP RETR →
downloaded."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import polars as pl
import pytest

from gram_site import GramSite, gram_fixture  # noqa: F401 (the fixture gram)
from gridbench.jobflow.analysis.experiment import analyze_run
from gridftp_site import GridftpSite, gridftp_fixture  # noqa: F401 (the fixture gridftp)
from test_command_gram import options
from test_command_runner import spec, trial_info
from test_runner import events, run_spec

pytestmark = pytest.mark.e2e

SIZE = 256 * 1024
#: the chain of every job, in order (µs stamps on one host's clock, but the gatekeeper's 1 s)
CHAIN = [
    "submit",
    "upload_start",
    "gridftp_stage_in_start",
    "gridftp_stage_in_end",
    "uploaded",
    "gram_lrm_submitted",
    "client_done",
    "download_start",
    "gridftp_stage_out_start",
    "gridftp_stage_out_end",
    "downloaded",
]


def test_gram_chain_uploads_and_downloads_through_gridftp(
    gram: GramSite, gridftp: GridftpSite, tmp_path: Path
) -> None:
    work, rdir = tmp_path / "work", tmp_path / "rdir"
    work.mkdir()
    stage, out_dir, url = gridftp.stage, gridftp.out, gridftp.url
    # the job copies its uploaded input into its output: it reads every byte ("$(" would
    # be an RSL substitution, so the script uses plain $d)
    job = f"d={stage}/{{name}}; o={out_dir}/{{name}}; mkdir $o && cp $d/input-00000.bin $o/"
    vs = {"url": gram.contact, "gram_log": str(gram.job_manager_log),
          "gatekeeper_log": str(gram.gatekeeper_log), "gridftp_log": str(gridftp.log)}  # fmt: skip
    opts = options(
        gram,
        work,
        rdir=str(rdir),
        vars=vs,
        stamps={"use": ["gram", "gridftp"]},
        submit={"argv": ["globus-job-submit", "{url}", "-x", "(two_phase={two_phase})",
                         "-l", "/bin/sh", "-c", job]},
        upload={"argv": ["globus-url-copy", "-cd", "-r", "file://{upload_dir}/",
                         f"{url}{stage}/{{name}}/"]},
        download={"argv": ["globus-url-copy", "-r", f"{url}{out_dir}/{{name}}/",
                           "file://{download_dir}/"]},
    )  # fmt: skip
    body = f"""
job: {{command: [/bin/true], input_size: {SIZE}}}
load: {{model: open, rate: 4/s}}
trial: {{jobs: 3}}
timeouts: {{status_interval: 0.3s, drain: 60s}}
"""
    out = run_spec(spec("gram-gridftp", opts, body), tmp_path / "results")
    assert out.status == "complete", gram.logs() + gridftp.logs()
    ev = events(out)
    names = sorted(ev.filter(pl.col("stage") == "client_done")["job"])
    assert len(names) == 3
    wide = ev.filter(pl.col("stage").is_in(CHAIN)).pivot(
        on="stage", index="job", values="t_ns", aggregate_function="min"
    )
    assert wide.height == 3 and set(wide.columns) == {"job", *CHAIN}, wide.columns
    for a, b in itertools.pairwise(CHAIN):
        assert (wide[a] <= wide[b]).all(), (a, b, wide.select("job", a, b))
    for stage_name in ("gridftp_stage_in_end", "gridftp_stage_out_end"):
        got = ev.filter(pl.col("stage") == stage_name)
        assert set(got["source"]) == {"gridftp"} and set(got["precision_ns"]) == {1_000}
    info = trial_info(out)["server_stamps"]
    assert info["unjoined_jobs"] == {"gram": 0, "gatekeeper": 0, "gridftp": 0}, info
    # the job read its uploaded input: its copy (made as GRAM's mapped account) came back
    # whole through the download, starting with the job's own name
    for name in names:
        made = out_dir / name / "input-00000.bin"
        assert made.stat().st_uid == gram.uid and made.stat().st_size == SIZE
        got = (rdir / "download" / name / "input-00000.bin").read_bytes()
        assert len(got) == SIZE and got.startswith(f"{name}\n".encode())
    for end in ("uploaded", "downloaded"):
        attrs = [json.loads(a) for a in ev.filter(pl.col("stage") == end)["attrs"]]
        assert [(a["bytes"], a["files"]) for a in attrs] == [(SIZE, 1)] * 3, (end, attrs)
    m = analyze_run(out.run.path, write=True)
    staged = m["points"][0]["trials"][0]["staging"]
    assert staged["upload"]["bytes_p50"] == staged["download"]["bytes_p50"] == SIZE
    chain = [s["name"] for s in m["chain"]["stages"]]
    assert [s for s in chain if s in CHAIN] == CHAIN
