"""GRAM5 in depth, live (tests/gram_site.py): the job manager's stamps (1 µs) and the
gatekeeper's (1 s) in each job's chain, read as declared data (``stamps: {use: gram}``)
and joined through the LRM id (gatekeeper -> LRM id -> the job manager's gramid).
About 15 s (the gatekeeper is shared with tests/jobflow/test_command_gram.py in one session)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gram_site import GramSite, gram_fixture  # noqa: F401 (the fixture gram)
from test_command_gram import options
from test_command_runner import spec, trial_info
from test_runner import events, run_spec

pytestmark = pytest.mark.e2e

STAGES = {
    "gram_lrm_submitted": ("gram", 1_000),
    "gatekeeper_lrm_id": ("gatekeeper", 1_000_000_000),
}


def test_gram_chain_has_the_gatekeeper_and_job_manager_stamps(
    gram: GramSite, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    stamps = {"use": "gram"}
    vs = {"url": gram.contact, "gram_log": str(gram.job_manager_log),
          "gatekeeper_log": str(gram.gatekeeper_log)}  # fmt: skip
    out = run_spec(
        spec(
            "gram-chain",
            options(gram, work, vars=vs, stamps=stamps),
            """
job: {command: [/bin/sleep, "0.5"]}
load: {model: open, rate: 4/s}
trial: {jobs: 3}
timeouts: {status_interval: 0.3s, drain: 40s}
""",
        ),
        tmp_path / "results",
    )
    assert out.status == "complete"
    ev = events(out)
    jobs = sorted(ev.filter(pl.col("stage") == "client_done")["job"])
    assert len(jobs) == 3
    for stage, (tier, prec) in STAGES.items():
        got = ev.filter(pl.col("stage") == stage)
        assert sorted(got["job"]) == jobs, (stage, got)
        assert set(got["source"]) == {tier} and set(got["precision_ns"]) == {prec}
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="min")
    assert (wide["submit"] < wide["gram_lrm_submitted"]).all()
    assert (wide["gram_lrm_submitted"] < wide["client_done"]).all()
    second = 1_000_000_000  # the gatekeeper's whole seconds truncate
    assert (wide["gram_lrm_submitted"] < wide["gatekeeper_lrm_id"] + second).all()
    assert trial_info(out)["server_stamps"]["unjoined_jobs"] == {"gram": 0, "gatekeeper": 0}
    # gram_end (logged when the two-phase commit lets the job go) is not waited for
