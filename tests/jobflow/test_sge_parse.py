"""Grid Engine parsers on output captured from Son of Grid Engine 8.1.9 (tests/sge_data/)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.backends.base import JobRequest, JobState, SubmitError
from gridbench.jobflow.backends.sge.backend import AccountingTail, SgeBackend, _job_name
from gridbench.jobflow.backends.sge.parse import (
    STAGE_END,
    STAGE_START,
    STAGE_SUBMIT,
    SgeParseError,
    epoch_ns,
    parse_accounting,
    parse_accounting_line,
    parse_qstat_xml,
    parse_qsub_id,
    qsub_failure_kind,
    qsub_message,
    state_of,
)

DATA = Path(__file__).parents[1] / "sge_data"
S = 1_000_000_000


def test_qsub_id() -> None:
    assert parse_qsub_id("42\n") == "42"
    assert parse_qsub_id("43.1-3:1\n") == "43"
    with pytest.raises(SgeParseError, match="no job id"):
        parse_qsub_id("Your job 5 has been submitted\n")


def test_qsub_message_drops_exiting() -> None:
    said = 'Unable to run job: Job was rejected because job requests unknown queue "nosuch.q"'
    err = said + "\nExiting.\n"
    assert qsub_message(err) == (
        'Unable to run job: Job was rejected because job requests unknown queue "nosuch.q"'
    )
    assert qsub_message("") == "qsub failed without a message"


def test_qstat_running_and_pending() -> None:
    jobs = parse_qstat_xml((DATA / "qstat-running-pending.xml").read_text())
    assert sorted(jobs) == ["5", "6", "7"]
    assert (jobs["5"].name, jobs["5"].owner, jobs["5"].state) == ("gbsleep", "root", "r")
    assert jobs["6"].state == "hqw"
    assert jobs["5"].status().state is JobState.RUNNING
    assert jobs["6"].status().state is JobState.QUEUED
    assert jobs["6"].status().message == "hqw"


def test_qstat_transfer_and_empty() -> None:
    jobs = parse_qstat_xml((DATA / "qstat-transfer.xml").read_text())
    assert {k: j.state for k, j in jobs.items()} == {"5": "t"}
    assert parse_qstat_xml((DATA / "qstat-empty.xml").read_text()) == {}


def test_qstat_broken() -> None:
    with pytest.raises(SgeParseError, match="not XML"):
        parse_qstat_xml("<job_info><queue_info>")
    with pytest.raises(SgeParseError, match="root element"):
        parse_qstat_xml("<html/>")


@pytest.mark.parametrize(
    ("code", "state"),
    [
        ("qw", JobState.QUEUED),
        ("hqw", JobState.QUEUED),
        ("t", JobState.RUNNING),
        ("r", JobState.RUNNING),
        ("dr", JobState.RUNNING),
        ("Rr", JobState.RUNNING),
        ("Eqw", JobState.FAILED),
    ],
)
def test_state_codes(code: str, state: JobState) -> None:
    assert state_of(code) is state


def test_accounting_records() -> None:
    recs, problems = parse_accounting((DATA / "accounting").read_text())
    assert problems == []
    assert [r.job_id for r in recs] == ["1", "2", "3", "4", "5", "7", "9"]
    ok, fail, killed, missing = recs[0], recs[3], recs[4], recs[6]
    assert ok.name == "gbt1"
    assert ok.stamps() == {
        STAGE_SUBMIT: 1795334387 * S,
        STAGE_START: 1795334387 * S,
        STAGE_END: 1795334387 * S,
    }
    assert ok.status().state is JobState.DONE
    assert (fail.exit_status, fail.failed) == (1, 0)
    assert fail.status().state is JobState.FAILED
    assert fail.status().message == "exit status 1"
    assert fail.status().exit_code == 1
    assert (killed.failed, killed.exit_status) == (100, 137)
    assert killed.end_ns == 1795334397 * S
    assert (
        killed.status().message
        == "exit status 137, failed 100 (assumedly after job: killed, or a signal)"
    )
    assert killed.status(cancelled=True).state is JobState.CANCELLED
    assert missing.status().exit_code == 127


def test_accounting_edge_cases() -> None:
    assert parse_accounting_line("# Version: 8.1.9") is None
    assert parse_accounting_line("") is None
    assert epoch_ns("0") is None
    assert epoch_ns("1795334387000") == 1795334387 * S  # a Grid Engine writing ms
    with pytest.raises(SgeParseError, match="fields"):
        parse_accounting_line("all.q:localhost:root")
    with pytest.raises(SgeParseError, match="non-numeric"):
        parse_accounting_line("q:h:g:o:n:1:a:0:x:0:0:0:0")
    good = "all.q:localhost:root:root:ok:12:sge:0:1795334387:1795334388:1795334389:0:0"
    recs, problems = parse_accounting(f"garbage\n{good}\n")
    assert [r.job_id for r in recs] == ["12"]  # a bad line never hides the next ones
    assert problems == ["accounting line has 1 fields, expected at least 13"]


def test_qsub_failure_kinds() -> None:
    assert qsub_failure_kind('Unable to run job: unknown queue "x"\nExiting.') == (
        "submit_rejected"
    )
    err = (DATA / "qsub-no-qmaster.txt").read_text()
    assert qsub_failure_kind(err) == "submit_error"


def test_accounting_tail_reads_only_complete_new_lines(tmp_path: Path) -> None:
    lines = (DATA / "accounting").read_text().splitlines(keepends=True)
    head = [x for x in lines if x.startswith("#")]
    jobs = [x for x in lines if not x.startswith("#")]
    path = tmp_path / "accounting"
    path.write_text("".join(head + jobs[:3]))
    tail = AccountingTail(path)
    tail.skip_existing()
    assert tail.read() == []
    with path.open("a") as f:
        f.write(jobs[3] + jobs[4][:20])  # one line and half of the next
    assert [r.job_id for r in tail.read()] == ["4"]
    with path.open("a") as f:
        f.write(jobs[4][20:])
    assert [r.job_id for r in tail.read()] == ["5"]
    assert tail.read() == []
    assert AccountingTail(tmp_path / "none").read() == []


def test_job_names_and_qsub_argv() -> None:
    assert _job_name("p00-t00-j000001") == "p00-t00-j000001"
    assert _job_name("1a/b:c") == "j1a_b_c"
    b = SgeBackend.from_options({"queue": "all.q", "qsub_args": ["-l", "h_rt=60"]})
    argv = b.submit_argv(JobRequest("gb-1", ("sleep", "1")))
    with pytest.raises(SubmitError, match="as an option"):
        asyncio.run(b.submit(JobRequest("gb-3", ("-h",))))
    assert argv == [
        "qsub", "-terse", "-b", "y", "-N", "gb-1", "-j", "y", "-o", "/dev/null",
        "-q", "all.q", "-l", "h_rt=60", "sleep", "1",
    ]  # fmt: skip
    # execd joins the arguments for sh -c: each is quoted so the job gets its argv
    quoted = b.submit_argv(JobRequest("gb-2", ("sh", "-c", "exit 3", "$HOME")))
    assert quoted[-4:] == ["sh", "-c", "'exit 3'", "'$HOME'"]


def test_unknown_option_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match=r"backend\.options\.qeue"):
        SgeBackend.from_options({"qeue": "all.q"})
