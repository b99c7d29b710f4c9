"""The command backend's input upload as a timed stage (``upload``): gridbench writes each
job's ``job.input_size`` bytes over ``job.input_files`` files, a real copy program moves
them into a staging directory before the submit call, the job reads them from there, and
``upload_start → uploaded`` carries the bytes, files and rate, set beside a plain copy of
the same bytes in the same run. The upload through GridFTP in a live GRAM chain is in
tests/jobflow/test_gram_gridftp.py."""

from __future__ import annotations

import itertools
import json
import shutil
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.backends.command.options import compile_options
from test_command_runner import failures, spec
from test_runner import events, run_spec

SIZES = (64 * 1024, 8 * 1024 * 1024)
FILES = 2


def options(stage: Path, seen: Path, **over: Any) -> dict[str, Any]:
    """The job (the submit template's shell) reads its uploaded input from the staging
    directory: the first line of each file (its name) and the byte count, into ``seen``."""
    job = (
        f"d={stage}/{{name}} && cat $d/* | wc -c > {seen}/{{name}}.bytes && "
        f"head -qn1 $d/* > {seen}/{{name}}.names && echo {{name}}"
    )
    return {
        "submit": {"argv": ["sh", "-c", job], "pattern": r"^(?P<id>\S+)$"},
        "status": {"argv": ["true", "{ids}"], "pattern": r"^(?P<id>\S+) (?P<state>\S+)$",
                   "missing": "done"},
        "upload": {"argv": ["cp", "-r", "{upload_dir}", f"{stage}/{{name}}"]},
        **over,
    }  # fmt: skip


def test_upload_stage_moves_the_swept_input_that_the_job_reads(tmp_path: Path) -> None:
    stage, seen = tmp_path / "stage", tmp_path / "seen"
    stage.mkdir()
    seen.mkdir()
    body = f"""
job: {{command: [/bin/true], input_files: {FILES}}}
load: {{model: open, rate: 20/s}}
trial: {{jobs: 3}}
timeouts: {{status_interval: 0.1s, drain: 30s}}
sweep: {{job.input_size: [64k, 8M]}}
"""
    out = run_spec(spec("upload", options(stage, seen), body), tmp_path / "results")
    assert out.status == "complete"
    rates: dict[int, list[float]] = {}
    for point, size in enumerate(SIZES):
        ev = events(out, f"p{point:02d}-t00")
        chain = ["submit", "upload_start", "uploaded", "submit_ack", "client_done"]
        wide = ev.filter(pl.col("stage").is_in(chain)).pivot(
            on="stage", index="job", values="t_ns", aggregate_function="first"
        )
        assert wide.height == 3
        for a, b in itertools.pairwise(chain):
            assert (wide[a] <= wide[b]).all(), (a, b)
        attrs = [json.loads(a) for a in ev.filter(pl.col("stage") == "uploaded")["attrs"]]
        assert [(a["bytes"], a["files"]) for a in attrs] == [(size, FILES)] * 3, attrs
        rates[size] = [a["rate_bps"] for a in attrs]
    # the job read what was uploaded: every byte, and its own name atop every file
    read = {p.stem: int(p.read_text()) for p in seen.glob("*.bytes")}
    assert sorted(read.values()) == sorted([SIZES[0]] * 3 + [SIZES[1]] * 3), read
    for p in seen.glob("*.names"):
        assert p.read_text().splitlines() == [p.stem] * FILES
    assert not list((tmp_path / "results").glob("**/upload/*/input-*"))  # local copies gone
    # a plain in-process copy of the larger input, now: cp (a process per job) is slower
    big = tmp_path / "plain-src.bin"
    big.write_bytes(b"x" * SIZES[-1])
    t0 = time.perf_counter()
    shutil.copyfile(big, tmp_path / "plain.bin")
    plain = SIZES[-1] / (time.perf_counter() - t0)
    assert max(rates[SIZES[-1]]) < plain * 4, (rates, plain)
    assert min(rates[SIZES[-1]]) > max(rates[SIZES[0]]), rates  # a process's fixed cost
    m = analyze_run(out.run.path, write=True)
    up = [t["staging"]["upload"] for p in m["points"] for t in p["trials"]]
    assert [u["bytes_p50"] for u in up] == list(SIZES) and all(u["errors"] == 0 for u in up)


def test_a_failed_upload_fails_the_submission_with_the_clients_reason(tmp_path: Path) -> None:
    stage, seen = tmp_path / "missing", tmp_path / "seen"
    seen.mkdir()
    opts = options(stage, seen)
    opts["upload"] = {"argv": ["cp", "-r", "{upload_dir}", f"{stage}/no/such/{{name}}"]}
    body = """
job: {command: [/bin/true], input_size: 1k}
load: {model: open, rate: 20/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.1s, drain: 10s}
"""
    out = run_spec(spec("upload-fail", opts, body), tmp_path / "results")
    f = failures(events(out))
    assert f.height == 2
    assert all(m.startswith("upload template: cp exited with 1") for m in f["message"]), f
    assert not list(seen.iterdir())  # no job ran without its input


@pytest.mark.parametrize(
    ("upload", "message"),
    [
        ({"argv": ["cp", "-r", "/tmp/x", "/tmp/y"]}, "does not use {upload_dir}"),
        ({"argv": ["cp", "-r", "{upload_dir}", "/tmp/{id}"]}, "{id}"),
        ({"argv": "cp {upload_dir} /tmp"}, "argv list"),
    ],
)
def test_bad_upload_options_are_one_error(upload: dict[str, Any], message: str) -> None:
    opts = options(Path("/tmp/s"), Path("/tmp/t"), upload=upload)
    with pytest.raises(SpecError) as e:
        compile_options(opts)
    assert message in str(e.value) and "upload" in str(e.value)
    assert e.value.fix
