"""The Slurm parsers, stamp merging and log tailing on output captured from Slurm 22.05.

tests/slurm_data/ holds real answers of a test cluster (tests/slurm_cluster.py): ten jobs
that completed, failed (exit 3, SIGKILL, a bad memory request), were cancelled running and
pending, hit their time limit, are held, or were completing.
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest

from gridbench.jobflow.backends.base import JobState
from gridbench.jobflow.backends.slurm.ctld_log import LogStamp, parse_log, parse_log_line
from gridbench.jobflow.backends.slurm.log import LogTail
from gridbench.jobflow.backends.slurm.parse import (
    SlurmJob,
    SlurmParseError,
    expand_task_string,
    job_state,
    parse_sacct,
    parse_sbatch_id,
    parse_scontrol_jobs,
    parse_squeue_json,
    parse_squeue_text,
    sbatch_failure_kind,
    sbatch_message,
)
from gridbench.jobflow.backends.slurm.stamps import StampBook
from gridbench.jobflow.events.model import Precision

DATA = Path(__file__).parents[1] / "slurm_data"
T0 = 1795332213  # 2026-11-22T07:23:33Z, when the captured jobs were submitted
S = 1_000_000_000


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_squeue_json_22_05() -> None:
    jobs = parse_squeue_json(read("squeue-22.05.json"))
    assert sorted(jobs, key=int) == [str(i) for i in range(1, 11)]
    states = {k: j.normalised for k, j in jobs.items()}
    assert states == {
        "1": JobState.DONE,
        "2": JobState.FAILED,
        "3": JobState.FAILED,
        "4": JobState.CANCELLED,
        "5": JobState.CANCELLED,
        "6": JobState.FAILED,
        "7": JobState.QUEUED,
        "8": JobState.RUNNING,  # COMPLETING is not over yet
        "9": JobState.DONE,
        "10": JobState.FAILED,
    }
    done = jobs["1"]
    assert (done.name, done.submit_s, done.eligible_s, done.start_s, done.end_s) == (
        "gb-t0-000000",
        T0,
        T0,
        T0,
        T0,
    )
    assert (jobs["2"].exit_code, jobs["2"].signal) == (3, None)  # raw wait status 768
    assert (jobs["3"].exit_code, jobs["3"].signal) == (None, 9)
    assert jobs["2"].status().message == "FAILED, exit code 3, reason NonZeroExitCode"
    assert jobs["6"].status().message == "TIMEOUT, signal 15, reason TimeLimit"
    assert jobs["6"].end_s == T0 + 81
    # cancelled while held: never allocated, so no start stamp; ended at the cancel
    held = jobs["5"]
    assert (held.eligible_s, held.start_s, held.end_s) == (None, None, T0 + 2)
    # pending: no start forecast, no end; completing: started, not ended
    assert (jobs["7"].start_s, jobs["7"].end_s) == (None, None)
    assert (jobs["8"].start_s, jobs["8"].end_s) == (T0, None)
    assert jobs["9"].name == 'gb "quoted" name'


def test_squeue_json_later_layout() -> None:
    """The 23.02+ layout: number objects, job_state lists, exit_code objects."""
    doc = {
        "meta": {},
        "errors": [],
        "jobs": [
            {
                "job_id": 42,
                "name": "x",
                "job_state": ["FAILED"],
                "submit_time": {"set": True, "infinite": False, "number": T0},
                "eligible_time": {"set": True, "infinite": False, "number": T0},
                "start_time": {"set": True, "infinite": False, "number": T0 + 1},
                "end_time": {"set": True, "infinite": False, "number": T0 + 2},
                "exit_code": {
                    "status": ["EXITED"],
                    "return_code": {"set": True, "infinite": False, "number": 2},
                },
                "nodes": "n1",
            },
            {
                "job_id": 43,
                "job_state": ["COMPLETED", "COMPLETING"],
                "submit_time": {"set": True, "number": T0},
                "start_time": {"set": False, "number": 0},
                "nodes": "",
            },
        ],
    }
    jobs = parse_squeue_json(json.dumps(doc))
    assert jobs["42"] == SlurmJob("42", "FAILED", "x", T0, T0, T0 + 1, T0 + 2, 2, None, "")
    assert jobs["43"].normalised is JobState.RUNNING
    assert jobs["43"].start_s is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "did not answer JSON"),
        ('{"jobs": [', "did not answer JSON"),
        ("[1, 2]", "without a 'jobs' list"),
        ('{"meta": {}}', "without a 'jobs' list"),
        ('{"jobs": [7]}', "job #0 is not an object"),
        ('{"jobs": [{"name": "x"}]}', "job #0 has no job_id"),
        ('{"jobs": [{"job_id": 1, "job_state": 5}]}', "job_state is 5"),
        (
            '{"jobs": [], "errors": [{"error": "x", "description": "Unable to contact"}]}',
            "reported errors: Unable to contact",
        ),
    ],
)
def test_squeue_json_malformed(text: str, message: str) -> None:
    with pytest.raises(SlurmParseError, match=message):
        parse_squeue_json(text)


def test_squeue_json_controller_down() -> None:
    """22.05 exits 0 with an error list when slurmctld is down (captured)."""
    with pytest.raises(SlurmParseError) as err:
        parse_squeue_json(read("squeue-controller-down-22.05.json"))
    assert str(err.value) == (
        "squeue --json reported errors: "
        "slurm_load_jobs: Failed while looking for jobs (Unspecified error)"
    )


def test_scontrol_agrees_with_squeue() -> None:
    sc = parse_scontrol_jobs(read("scontrol-show-job-22.05.txt"), UTC)
    sq = parse_squeue_json(read("squeue-22.05.json"))
    assert sc.keys() == sq.keys()
    for k in sc:
        a, b = sc[k], sq[k]
        assert (a.submit_s, a.eligible_s, a.start_s) == (b.submit_s, b.eligible_s, b.start_s), k
        assert (a.exit_code, a.signal) == (b.exit_code, b.signal), k
    # captured a little later: job 8 had finished being cancelled
    assert sc["8"].normalised is JobState.CANCELLED and sc["8"].end_s == T0 + 163
    assert sc["9"].name == 'gb "quoted" name'
    assert sc["5"].start_s is None


def test_scontrol_rejects_garbage() -> None:
    with pytest.raises(SlurmParseError, match="without JobId"):
        parse_scontrol_jobs("slurm_load_jobs error: Invalid job id specified\n")


def test_sacct_parsable() -> None:
    """Captured from a cluster with slurmdbd: two completed jobs, one cancelled while held."""
    jobs = parse_sacct(read("sacct-22.05.txt"), UTC)
    t = 1795332668  # 2026-11-22T07:31:08Z
    assert jobs["1"] == SlurmJob("1", "COMPLETED", "gb-acct-1", t, t, t + 1, t + 1, 0, None, "None")
    held = jobs["3"]
    assert held.normalised is JobState.CANCELLED and held.state == "CANCELLED by 0"
    assert (held.eligible_s, held.start_s, held.end_s) == (None, None, t + 2)
    steps = "JobID|State|Submit|Eligible|Start|End|ExitCode\n5.batch|COMPLETED|||||0:0\n"
    assert parse_sacct(steps) == {}  # job steps are skipped
    with pytest.raises(SlurmParseError, match="lacks one of"):
        parse_sacct("JobID|State\n1|RUNNING\n")
    with pytest.raises(SlurmParseError, match="has 2 fields"):
        parse_sacct("JobID|State|Submit|Eligible|Start|End|ExitCode\n1|RUNNING\n")


def test_job_state_words() -> None:
    assert job_state("CANCELLED by 0") is JobState.CANCELLED
    assert job_state("CA") is JobState.CANCELLED
    assert job_state("PD") is JobState.QUEUED
    assert job_state("OUT_OF_MEMORY") is JobState.FAILED
    assert job_state("SOMETHING_NEW") is JobState.UNKNOWN


def test_sbatch_answers() -> None:
    assert parse_sbatch_id("401\n") == "401"
    assert parse_sbatch_id("402;cluster\n") == "402"
    with pytest.raises(SlurmParseError):
        parse_sbatch_id("Submitted batch job 5\n")
    part = read("sbatch-invalid-partition.stderr")
    assert sbatch_failure_kind(part) == "submit_rejected"
    assert sbatch_message(part) == (
        "invalid partition specified: nope; "
        "Batch job submission failed: Invalid partition name specified"
    )
    assert sbatch_failure_kind(read("sbatch-node-config.stderr")) == "submit_rejected"
    down = "sbatch: error: Batch job submission failed: Unable to contact slurm controller"
    assert sbatch_failure_kind(down) == "submit_error"
    slow = "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
    assert sbatch_failure_kind(slow) == "submit_timeout"


def test_log_lines() -> None:
    stamps = parse_log(read("slurmctld-22.05.log").splitlines(), UTC)
    by = {(s.job_id, s.stage): s.t_ns for s in stamps}
    assert by[("1", "slurm_submit")] == T0 * S + 185_000_000
    assert by[("1", "slurm_start")] == T0 * S + 899_000_000
    assert by[("1", "slurm_end")] == T0 * S + 966_000_000
    assert len([s for s in stamps if s.stage == "slurm_submit"]) == 9  # job 10 was refused
    assert len([s for s in stamps if s.stage == "slurm_start"]) == 7
    assert {s.job_id for s in stamps if s.stage == "slurm_end"} == {"1", "2", "3", "9"}
    # a whole-second log gives nothing; an offset overrides the zone; array tasks are A_i
    assert parse_log_line("[2026-11-22T07:23:33] sched: Allocate JobId=4 NodeList=n") is None
    s = parse_log_line("[2026-11-22T08:23:33.500+01:00] _job_complete: JobId=7_3(12) done")
    assert s == LogStamp("7_3", "slurm_end", T0 * S + 500_000_000)
    a = parse_log_line("[2026-11-22T07:23:33.250] sched: Allocate JobId=7_3(12) NodeList=n #CPUs=1")
    assert a is not None and (a.job_id, a.stage) == ("7_3", "slurm_start")
    assert parse_log_line("[2026-11-22T07:23:33.250] sched: Allocate JobId=71x NodeList=n") is None
    assert parse_log_line("[2026-11-22T07:23:33.001] _job_complete: JobId=4 WEXITSTATUS 0") is None


def test_stamp_book_prefers_log_and_fills_the_rest() -> None:
    sq = parse_squeue_json(read("squeue-22.05.json"))
    logs = parse_log(read("slurmctld-22.05.log").splitlines(), UTC)
    book = StampBook()
    book.add_log(logs[:3])  # submit lines of jobs 1-3, read before sbatch returned
    for j in ("1", "4", "5"):
        book.watch(j)
    book.add_log(logs[3:])
    early = book.drain()
    assert {(e.job, e.stage) for e in early} == {
        ("1", "slurm_submit"),
        ("1", "slurm_start"),
        ("1", "slurm_end"),
        ("4", "slurm_submit"),
        ("4", "slurm_start"),
        ("5", "slurm_submit"),
    }
    assert all(e.precision_ns == Precision.MS and e.source == "slurmctld" for e in early)
    for j in ("1", "4", "5"):
        book.add_final(sq[j], "squeue")
    late = {(e.job, e.stage): e for e in book.drain()}
    # job 1: only eligible is missing from the log; eligible in the second of submission,
    # so at the (ms) submit stamp
    e = late.pop(("1", "slurm_eligible"))
    assert (e.t_ns, e.precision_ns, e.attrs) == (
        T0 * S + 185_000_000,
        Precision.MS,
        {"from": "squeue", "same_as": "slurm_submit"},
    )
    # job 4 (cancelled while running: no _job_complete line) gets its end from squeue
    e = late.pop(("4", "slurm_end"))
    assert (e.t_ns, e.precision_ns, e.attrs) == ((T0 + 2) * S, Precision.S, {"from": "squeue"})
    assert late.pop(("4", "slurm_eligible")).t_ns == T0 * S + 214_000_000
    # job 5 (cancelled while held): never eligible nor started
    assert late.pop(("5", "slurm_end")).t_ns == (T0 + 2) * S
    assert late == {}
    assert book.drain() == []
    assert not book.watching("1")


def test_stamp_book_keeps_order_across_a_second_boundary() -> None:
    """Seen live: submit_time 63 s, but the submit RPC's log line at 64.003 s."""
    book = StampBook()
    book.watch("2")
    book.add_log([LogStamp("2", "slurm_submit", (T0 + 1) * S + 3_000_000)])
    job = SlurmJob("2", "CANCELLED", "x", T0, T0, T0, T0 + 1, None, 15, "")
    book.add_final(job, "squeue")
    ev = {e.stage: e for e in book.drain()}
    submit = (T0 + 1) * S + 3_000_000
    assert ev["slurm_eligible"].t_ns == submit  # eligible at submission
    assert ev["slurm_start"].t_ns == submit and ev["slurm_start"].attrs["clamped"]
    assert ev["slurm_end"].t_ns == (T0 + 1) * S + 3_000_000  # T0+1 s, raised to the start
    far = StampBook()  # more than a second (plus the log lag) apart: left alone
    far.watch("3")
    far.add_log([LogStamp("3", "slurm_submit", T0 * S + 2_500_000_000)])
    far.add_final(SlurmJob("3", "COMPLETED", "", T0, T0 + 1, None, None), "squeue")
    ev = {e.stage: e for e in far.drain()}
    assert (ev["slurm_eligible"].t_ns, ev["slurm_eligible"].attrs) == (
        (T0 + 1) * S,
        {"from": "squeue"},
    )


def test_stamp_book_without_log() -> None:
    sq = parse_squeue_json(read("squeue-22.05.json"))
    book = StampBook()
    book.watch("6")
    book.add_final(sq["6"], "squeue")
    ev = book.drain()
    assert [(e.stage, e.t_ns // S, e.precision_ns) for e in ev] == [
        ("slurm_submit", T0, S),
        ("slurm_eligible", T0, S),
        ("slurm_start", T0, S),
        ("slurm_end", T0 + 81, S),
    ]


def test_log_tail_reads_only_new_complete_lines(tmp_path: Path) -> None:
    p = tmp_path / "slurmctld.log"
    p.write_text("old line\n")
    tail = LogTail(p)
    assert tail.read_lines() == []
    with p.open("a") as f:
        f.write("one\ntw")
    assert tail.read_lines() == ["one"]
    with p.open("a") as f:
        f.write("o\n")
    assert tail.read_lines() == ["two"]
    p.write_text("rotated\n")  # shorter than before: read from the top
    assert tail.read_lines() == ["rotated"]


def test_array_task_strings_expand() -> None:
    assert expand_task_string("0-5") == [0, 1, 2, 3, 4, 5]
    assert expand_task_string("1,3,7-9%2") == [1, 3, 7, 8, 9]
    assert expand_task_string("0-8:4") == [0, 4, 8]
    assert expand_task_string("") == []
    for bad in ("a-b", "5-1", "0-9:0"):
        with pytest.raises(SlurmParseError):
            expand_task_string(bad)


def test_squeue_json_array_records_are_keyed_by_task() -> None:
    # real 22.05 output: array 1 (0-5%2) with tasks 0 and 1 running, 2-5 still pending
    text = (DATA / "squeue-array-22.05.json").read_text()
    jobs = parse_squeue_json(text, arrays={"1"})
    assert {k: j.state for k, j in jobs.items() if "_" in k} == {
        "1_0": "RUNNING",
        "1_1": "RUNNING",
        "1_2": "PENDING",
        "1_3": "PENDING",
        "1_4": "PENDING",
        "1_5": "PENDING",
    }
    assert jobs["1_2"].job_id == "1_2" and jobs["2"].job_id == "2"
    # someone else's array is neither expanded nor checked
    assert not any("_" in k for k in parse_squeue_json(text))


def test_stamp_book_fans_the_array_submit_line_out_to_tasks() -> None:
    book = StampBook()
    sub = LogStamp("5", "slurm_submit", 1_000)
    book.add_log([sub])  # read before sbatch answered
    book.watch("5_0")
    book.watch("5_1")
    book.add_log([LogStamp("5_1", "slurm_start", 2_000)])
    got = {(e.job, e.stage) for e in book.drain()}
    assert got == {("5_0", "slurm_submit"), ("5_1", "slurm_submit"), ("5_1", "slurm_start")}


def test_an_array_cancelled_whole_stands_for_its_tasks() -> None:
    # real 22.05 output after scancel of every task of a pending array 1 (0-3)
    text = (DATA / "squeue-array-cancelled-22.05.json").read_text()
    jobs = parse_squeue_json(text, arrays={"1"})
    assert jobs["1_*"].state == "CANCELLED" and "1_0" not in jobs


def test_squeue_text_format_matches_the_json_fields() -> None:
    # real 22.05 output: a job named "we|ird name", array 3 (0-5%2) with tasks 0-1 done
    # and 2-5 pending, and a failed job (exit 1)
    text = (DATA / "squeue-format-22.05.txt").read_text()
    jobs = parse_squeue_text(text, UTC, arrays={"3"})
    assert jobs["2"].name == "we|ird name" and jobs["2"].state == "COMPLETED"
    assert jobs["1"].status().state is JobState.FAILED
    assert "exit code 1" in jobs["1"].status().message
    assert {k: j.state for k, j in jobs.items() if k.startswith("3_")} == {
        "3_0": "COMPLETED",
        "3_1": "COMPLETED",
        "3_2": "PENDING",
        "3_3": "PENDING",
        "3_4": "PENDING",
        "3_5": "PENDING",
    }
    done = jobs["3_0"]
    assert done.start_s is not None and done.end_s is not None and done.start_s <= done.end_s
    assert jobs["3_2"].start_s is None  # pending: no start yet
    assert not any("_" in k for k in parse_squeue_text(text, UTC))
    with pytest.raises(SlurmParseError):
        parse_squeue_text("1|2|3\n")
