"""Pure parsers for Grid Engine client output and its accounting file.

Checked against Son of Grid Engine 8.1.9 (samples in tests/sge_data/):

- ``qsub -terse`` prints the job id (``42``, or ``42.1-3:1`` for an array job);
- ``qstat -xml`` lists jobs that have not ended, with a state code such as ``qw``, ``hqw``,
  ``t``, ``r``, ``dr`` or ``Eqw``;
- the accounting file (``$SGE_ROOT/$SGE_CELL/common/accounting``, accounting(5)) gets one
  colon-separated line per ended job: field 8 ``submission_time``, 9 ``start_time``,
  10 ``end_time`` (whole seconds since the epoch; some later Grid Engines write ms),
  11 ``failed`` and 12 ``exit_status``. A job deleted while pending gets no line.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from gridbench.jobflow.backends.base import JobState, JobStatus
from gridbench.jobflow.events.model import FAIL_SUBMIT_ERROR, FAIL_SUBMIT_REJECTED

STAGE_SUBMIT = "sge_submit"
STAGE_START = "sge_start"
STAGE_END = "sge_end"
SERVER_STAGES = (STAGE_SUBMIT, STAGE_START, STAGE_END)
MS_EPOCH_THRESHOLD = 100_000_000_000  # a larger epoch time is in milliseconds
ACCT_MIN_FIELDS = 13


class SgeParseError(ValueError):
    """Grid Engine answered something this parser does not understand."""


def parse_qsub_id(out: str) -> str:
    """The job id from ``qsub -terse`` output (the array part of ``42.1-3:1`` dropped)."""
    for line in out.splitlines():
        word = line.strip().split(".", 1)[0]
        if word.isdigit():
            return word
    raise SgeParseError(f"qsub printed no job id: {out.strip()[:200]!r}")


def qsub_message(err: str) -> str:
    """qsub's error text on one line, without its trailing ``Exiting.``."""
    lines = [x.strip() for x in err.splitlines() if x.strip() and x.strip() != "Exiting."]
    return "; ".join(lines)[:300] or "qsub failed without a message"


UNREACHABLE = (
    "unable to contact qmaster",
    "unable to send message to qmaster",
    "commlib error",
    "can't find connection",
)


def qsub_failure_kind(err: str) -> str:
    """``submit_error`` when qsub could not reach qmaster, else ``submit_rejected``."""
    low = err.lower()
    return FAIL_SUBMIT_ERROR if any(x in low for x in UNREACHABLE) else FAIL_SUBMIT_REJECTED


#: accounting ``failed`` codes worth a word (sge_status(5)): the usual set-up mistakes
FAILED_CODES = {
    1: "assumedly before job: the shepherd could not start it",
    7: "before prolog",
    26: "opening the job's output file",
    27: "finding the requested shell",
    28: "changing to the working directory: does the owner have a home there?",
    37: "the qmaster enforced h_rt",
    100: "assumedly after job: killed, or a signal",
}


@dataclass(frozen=True, slots=True)
class QstatJob:
    """One job as ``qstat -xml`` lists it."""

    job_id: str
    name: str
    owner: str
    state: str

    def status(self) -> JobStatus:
        """The normalised state of a job that has not ended."""
        return JobStatus(state_of(self.state), self.state)


def state_of(code: str) -> JobState:
    """Normalise a qstat state code: ``E`` is an error, ``r``/``t``/``s`` running or
    transferring (also while being deleted, ``dr``), anything else is waiting."""
    if "E" in code:
        return JobState.FAILED
    if any(c in code for c in "rtRsST"):
        return JobState.RUNNING
    return JobState.QUEUED


def parse_qstat_xml(text: str) -> dict[str, QstatJob]:
    """Every job of a ``qstat -xml`` answer, by id (an array's tasks share one entry)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise SgeParseError(f"qstat -xml is not XML: {exc}") from None
    if root.tag != "job_info":
        raise SgeParseError(f"qstat -xml: unexpected root element <{root.tag}>")
    jobs: dict[str, QstatJob] = {}
    for el in root.iter("job_list"):
        jid = (el.findtext("JB_job_number") or "").strip()
        if not jid.isdigit():
            raise SgeParseError("qstat -xml: a job_list without a JB_job_number")
        jobs.setdefault(
            jid,
            QstatJob(
                jid,
                (el.findtext("JB_name") or "").strip(),
                (el.findtext("JB_owner") or "").strip(),
                (el.findtext("state") or "").strip(),
            ),
        )
    return jobs


@dataclass(frozen=True, slots=True)
class AcctRecord:
    """One ended job from the accounting file; times in ns (None if it never started)."""

    job_id: str
    name: str
    submit_ns: int
    start_ns: int | None
    end_ns: int | None
    failed: int
    exit_status: int

    def status(self, *, cancelled: bool = False) -> JobStatus:
        """DONE when neither Grid Engine nor the command failed; CANCELLED if we qdel'd it."""
        if cancelled:
            return JobStatus(JobState.CANCELLED, "deleted (qdel)", self.exit_status)
        if self.failed == 0 and self.exit_status == 0:
            return JobStatus(JobState.DONE, "", 0)
        msg = f"exit status {self.exit_status}"
        if self.failed:
            why = FAILED_CODES.get(self.failed)
            msg += f", failed {self.failed}" + (f" ({why})" if why else "")
        return JobStatus(JobState.FAILED, msg, self.exit_status)

    def stamps(self) -> dict[str, int]:
        """The server stamps this record gives, by stage."""
        out = {STAGE_SUBMIT: self.submit_ns}
        if self.start_ns is not None:
            out[STAGE_START] = self.start_ns
        if self.end_ns is not None:
            out[STAGE_END] = self.end_ns
        return out


def epoch_ns(value: str) -> int | None:
    """An accounting time (seconds, or ms when that large) in ns; 0 means never."""
    n = int(value)
    if n <= 0:
        return None
    if n >= MS_EPOCH_THRESHOLD:
        return n * 1_000_000
    return n * 1_000_000_000


def parse_accounting_line(line: str) -> AcctRecord | None:
    """One accounting line; None for comments and blank lines."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    f = line.split(":")
    if len(f) < ACCT_MIN_FIELDS:
        raise SgeParseError(f"accounting line has {len(f)} fields, expected at least 13")
    try:
        submit = epoch_ns(f[8])
        rec = AcctRecord(
            job_id=f[5],
            name=f[4],
            submit_ns=submit or 0,
            start_ns=epoch_ns(f[9]),
            end_ns=epoch_ns(f[10]),
            failed=int(f[11]),
            exit_status=int(f[12]),
        )
    except ValueError:
        raise SgeParseError(f"accounting line has non-numeric fields: {line[:120]!r}") from None
    if not rec.job_id.isdigit():
        raise SgeParseError(f"accounting line has job number {rec.job_id!r}")
    return rec


def parse_accounting(text: str) -> tuple[list[AcctRecord], list[str]]:
    """Every record of (a chunk of) the accounting file in file order, and the problems of
    the lines that could not be read (skipped, so one bad line never hides the rest)."""
    out = []
    problems = []
    for line in text.splitlines():
        try:
            rec = parse_accounting_line(line)
        except SgeParseError as exc:
            problems.append(str(exc))
            continue
        if rec is not None:
            out.append(rec)
    return out, problems
