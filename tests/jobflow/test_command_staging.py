"""The command backend's output download as a timed stage (``download``), on the demo CLI:
a sweep of the staged size, each job's bytes, file count and rate, set beside a plain copy
of the same bytes in the same run. Live ARC downloads are in tests/jobflow/test_arc_chain.py."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import polars as pl

from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.report.rows import all_tables
from gridbench.jobflow.report.staging import staging_table
from test_command_runner import demo, spec
from test_runner import events, run_spec

SIZES_KIB = (64, 8192)


def test_download_stage_sweeps_the_staged_size_and_reports_the_rate(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for kib in SIZES_KIB:
        (work / f"payload-{kib}.bin").write_bytes(b"\x5a" * (kib * 1024))
    opts = demo(
        tmp_path / "state",
        workdir=str(work),
        vars={"state_dir": str(tmp_path / "state"), "kib": str(SIZES_KIB[0])},
        download={"argv": ["cp", "{workdir}/payload-{kib}.bin", "{download_dir}/"]},
    )
    body = f"""
job: {{command: [/bin/true]}}
load: {{model: open, rate: 20/s}}
trial: {{jobs: 3}}
timeouts: {{status_interval: 0.2s, drain: 30s}}
sweep: {{backend.options.vars.kib: {json.dumps([str(k) for k in SIZES_KIB])}}}
"""
    out = run_spec(spec("staging", opts, body), tmp_path / "results")
    assert out.status == "complete"
    rates: dict[int, list[float]] = {}
    for point, kib in enumerate(SIZES_KIB):
        ev = events(out, f"p{point:02d}-t00")
        chain = ev.filter(pl.col("stage").is_in(["client_done", "download_start", "downloaded"]))
        wide = chain.pivot(on="stage", index="job", values="t_ns")
        assert wide.height == 3
        assert (wide["client_done"] <= wide["download_start"]).all()
        assert (wide["download_start"] < wide["downloaded"]).all()
        attrs = [json.loads(a) for a in ev.filter(pl.col("stage") == "downloaded")["attrs"]]
        assert [(a["bytes"], a["files"]) for a in attrs] == [(kib * 1024, 1)] * 3, attrs
        rates[kib] = [a["rate_bps"] for a in attrs]
    # a plain in-process copy of the large payload, now: cp (a process per job) is slower
    src = work / f"payload-{SIZES_KIB[-1]}.bin"
    t0 = time.perf_counter()
    shutil.copyfile(src, tmp_path / "plain.bin")
    plain = src.stat().st_size / (time.perf_counter() - t0)
    assert max(rates[SIZES_KIB[-1]]) < plain * 4, (rates, plain)  # same order at most
    # the fixed cost of a client process weighs less on the larger transfer
    assert min(rates[SIZES_KIB[-1]]) > max(rates[SIZES_KIB[0]]), rates
    # analysis and report carry the rate beside the latency
    m = analyze_run(out.run.path, write=True)
    staged = [t["staging"]["download"] for p in m["points"] for t in p["trials"]]
    assert [s["bytes_p50"] for s in staged] == [k * 1024 for k in SIZES_KIB]
    assert [s["jobs"] for s in staged] == [3, 3] and all(s["errors"] == 0 for s in staged)
    table = staging_table(m)
    assert table is not None and len(table.rows) == 2
    assert [r["kib_p50"] for r in all_tables(m)["staging"]] == list(SIZES_KIB)  # staging.csv


def test_swept_output_size_reaches_the_submit_template_and_the_download(tmp_path: Path) -> None:
    # the job makes {output_size} bytes in {output_files} files; the download moves them
    out_dir = tmp_path / "out"
    make = (
        f"mkdir -p {out_dir}/{{name}} && for i in $(seq 1 {{output_files}}); do "
        f"head -c $(({{output_size}} / {{output_files}})) /dev/zero > {out_dir}/{{name}}/f$i; "
        "done && echo {name}"
    )
    opts = {
        "submit": {"argv": ["sh", "-c", make], "pattern": r"^(?P<id>\S+)$"},
        "status": {"argv": ["true", "{ids}"], "pattern": r"^(?P<id>\S+) (?P<state>\S+)$",
                   "missing": "done"},
        "download": {"argv": ["sh", "-c", f"cp {out_dir}/{{id}}/* {{download_dir}}/"]},
    }  # fmt: skip
    body = """
job: {command: [/bin/true], output_files: 2}
load: {model: open, rate: 20/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.1s, drain: 30s}
sweep: {job.output_size: [64k, 1M]}
"""
    out = run_spec(spec("staging-size", opts, body), tmp_path / "results")
    assert out.status == "complete"
    for point, size in enumerate((64 * 1024, 1024 * 1024)):
        ev = events(out, f"p{point:02d}-t00")
        attrs = [json.loads(a) for a in ev.filter(pl.col("stage") == "downloaded")["attrs"]]
        assert [(a["bytes"], a["files"]) for a in attrs] == [(size, 2)] * 2, attrs
