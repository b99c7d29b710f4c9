"""One chain across two tiers on real grid middleware: A-REX in front of the suite's Slurm
(and A-REX with its fork LRMS), each tier stamped by its own server-side records, read as
declared data (gridbench.jobflow.events.stamps; shipped declarations arc-slurm, arc-fork).

A ramp of jobs goes through the command backend's arc preset; every job must carry
A-REX's stages (1 s, from accounting.db), Slurm's (1 ms, from the slurmctld log, joined
through the Slurm job id A-REX wrote in job.<id>.local), the client's and the timed
download of its output (arcget, which also cleans the job off the CE). The analysis then
gives the per-stage breakdown and names a breaking stage as for the EDGI demo.

The two runs go at the same time (each waits on ARC's status lag of up to a minute); the
test takes about two minutes.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from arc_site import ArcSite, arc_fixture, running_site  # noqa: F401 (the fixture arc)
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.experiment.cleanup import cleanup_run
from gridbench.store.layout import RunDir
from slurm_cluster import PARTITION, SlurmCluster, slurm_fixture  # noqa: F401 (slurm)
from test_command_runner import spec, trial_info
from test_runner import events, run_spec

pytestmark = pytest.mark.e2e

OUT_BYTES = 200_000
JOB_XRSL = (
    '&(executable="/bin/sh")(arguments="-c" "cat in.txt > copy.txt; head -c {n} /dev/zero'
    ' > out.dat")(inputfiles=("in.txt" "{inp}"))(outputfiles=("out.dat" "")("copy.txt" ""))'
    '(jobname="gb-chain")'
)
IN_TEXT = "input staged by arcsub\n"
RUN_BODY = """
load: {model: open, ramp: {from: 1/s, to: 3/s, duration: 3s}}
trial: {duration: 3s}
timeouts: {status_interval: 2s, drain: 150s}
"""
SLURM_STAGES = ("slurm_submit", "slurm_start", "slurm_end")
AREX_STAGES = ("arex_accepted", "arex_preparing", "arex_submit", "arex_finishing", "arex_finished")


@pytest.fixture(scope="module", name="arc_slurm")
def arc_slurm_fixture(slurm: SlurmCluster) -> Iterator[ArcSite]:
    """A-REX with lrms=slurm over the suite's shared Slurm cluster."""
    with running_site("slurm", PARTITION, slurm.env) as site:
        yield site


def options(site: ArcSite, tmp: Path, stamps: str, **v: str) -> dict[str, Any]:
    inp = tmp / "in.txt"
    inp.write_text(IN_TEXT)
    app = tmp / "job.xrsl"
    app.write_text(JOB_XRSL.format(n=OUT_BYTES, inp=inp) + "\n")
    return {
        "preset": "arc",
        "env": site.env,
        "workdir": str(tmp),
        "vars": {
            "url": site.url,
            "app": str(app),
            "client_args": ["-j", str(tmp / "jobs.dat")],
            "arc_controldir": str(site.control),
            **v,
        },
        "stamps": {"use": stamps},
        "download": {"argv": ["arcget", "{client_args}", "-D", "{download_dir}", "{id}"]},
    }


def check_chain(out: Any, tiers: dict[str, tuple[str, ...]]) -> pl.DataFrame:
    """Every job done with every stage of every tier, at the tier's precision."""
    assert out.status == "complete"
    ev = events(out)
    jobs = ev.filter(pl.col("stage") == "client_done")["job"].unique()
    assert 3 <= jobs.len() == ev.filter(pl.col("stage") == "submit_ack")["job"].n_unique()
    for tier, stages in tiers.items():
        for st in stages:
            got = ev.filter(pl.col("stage") == st)
            assert sorted(got["job"]) == sorted(jobs), (tier, st, got)
            assert set(got["source"]) == {tier}
    prec = dict(ev.select("stage", "precision_ns").unique().iter_rows())
    assert prec["arex_accepted"] == 1_000_000_000
    info = trial_info(out)
    stamps = info["server_stamps"]
    assert stamps["unjoined_jobs"] == dict.fromkeys(tiers, 0), stamps
    assert stamps["problems"] == {}, stamps  # every source read at the end of the run
    # the output download, timed, with its size and rate
    dl = ev.filter(pl.col("stage") == "downloaded")
    assert sorted(dl["job"]) == sorted(jobs)
    attrs = [json.loads(a) for a in dl["attrs"]]
    assert all(a["bytes"] == OUT_BYTES + len(IN_TEXT) and a["files"] == 2 for a in attrs), attrs
    assert all(a["rate_bps"] > 0 and "error" not in a for a in attrs)
    # beside a plain copy of the same bytes, now: arcget (a process, TLS, A-REX's REST)
    # moves them slower than a local copy, and its rate is in bytes per second
    src = out.run.path / "plain-copy-src"
    src.write_bytes(b"\0" * (OUT_BYTES + len(IN_TEXT)))
    t0 = time.perf_counter()
    shutil.copyfile(src, out.run.path / "plain-copy-dst")
    plain_bps = src.stat().st_size / max(time.perf_counter() - t0, 1e-9)
    assert all(1e3 < a["rate_bps"] < plain_bps for a in attrs), (plain_bps, attrs)
    return ev


def test_arc_over_slurm_and_fork_give_one_chain_per_job_across_tiers(
    arc_slurm: ArcSite,
    arc: ArcSite,
    slurm: SlurmCluster,
    tmp_path: Path,
) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "f").mkdir()
    s_opts = options(arc_slurm, tmp_path / "s", "arc-slurm", slurmctld_log=str(slurm.ctld_log))
    f_opts = options(arc, tmp_path / "f", "arc-fork")
    with ThreadPoolExecutor(2) as pool:
        s_f = pool.submit(run_spec, spec("arc-slurm", s_opts, RUN_BODY), tmp_path / "rs")
        f_f = pool.submit(run_spec, spec("arc-fork", f_opts, RUN_BODY), tmp_path / "rf")
        s_out, f_out = s_f.result(), f_f.result()

    ev = check_chain(s_out, {"arex": AREX_STAGES, "slurm": SLURM_STAGES})
    prec = dict(ev.select("stage", "precision_ns").unique().iter_rows())
    assert prec["slurm_start"] == 1_000_000
    # the chain is in order for each job, tiers interleaved (1 s stamps truncate: +1 s)
    wide = ev.filter(pl.col("stage").is_in(["arex_submit", "slurm_submit", "slurm_end",
                                             "arex_finished", "client_done", "download_start",
                                             "downloaded"]))  # fmt: skip
    wide = wide.pivot(on="stage", index="job", values="t_ns")
    s = 1_000_000_000
    assert (wide["arex_submit"] <= wide["slurm_submit"]).all()
    assert (wide["slurm_end"] <= wide["arex_finished"] + s).all()
    assert (wide["arex_finished"] < wide["client_done"]).all()
    assert (wide["client_done"] <= wide["download_start"]).all()  # seen done, then fetched
    assert (wide["download_start"] < wide["downloaded"]).all()

    check_chain(f_out, {"arex": (*AREX_STAGES, "arex_lrms_start", "arex_lrms_end")})

    # the analysis breaks the latency down over both tiers and names a breaking stage
    m = analyze_run(s_out.run.path, write=True)
    text = json.dumps(m)
    for seg in ("arex_submit->slurm_submit", "slurm_end->arex_finishing", "download_start"):
        assert seg in text, seg
    assert "bottleneck" in text

    # nothing left in either queue: arcget cleaned the CE, Slurm ran them all
    # (force: the run finished, but in this very process)
    report = asyncio.run(cleanup_run(RunDir(s_out.run.path), force=True))
    assert report is not None
    assert not list(arc_slurm.control.glob("job.*.local"))
    assert slurm.run("squeue", "-h", "-n", "gb_chain", "-o", "%i").strip() == ""
