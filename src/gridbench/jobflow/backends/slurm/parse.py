"""Pure parsers of Slurm's answers: squeue/sacct/scontrol job records and sbatch
replies. No I/O here; every function is tested on captured real output.

``squeue --json`` is read in the 22.05 layout (plain integers, ``job_state`` a string,
``exit_code`` a raw wait status) and in the later ones (``{"set", "number"}`` objects,
``job_state`` a list, ``exit_code`` an object), so a newer Slurm does not break a sweep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import Any

from gridbench.jobflow.backends.base import JobState, JobStatus
from gridbench.jobflow.events.model import (
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_REJECTED,
    FAIL_SUBMIT_TIMEOUT,
)


class SlurmParseError(ValueError):
    """Slurm answered something that is not the expected format."""


_QUEUED = {
    "PENDING",
    "CONFIGURING",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESV_DEL_HOLD",
    "SPECIAL_EXIT",
}
_RUNNING = {
    "RUNNING",
    "COMPLETING",
    "SUSPENDED",
    "STOPPED",
    "SIGNALING",
    "STAGE_OUT",
    "RESIZING",
    "POWER_UP_NODE",
    "UPDATE_DB",
}
_FAILED = {
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
    "LAUNCH_FAILED",
}
_CANCELLED = {"CANCELLED", "REVOKED"}


def job_state(raw: str) -> JobState:
    """Normalise a Slurm job state (``CANCELLED by 0`` and ``CA`` forms included)."""
    word = raw.strip().split(" ", 1)[0].rstrip("+").upper()
    word = _SHORT.get(word, word)
    if word == "COMPLETED":
        return JobState.DONE
    if word in _QUEUED:
        return JobState.QUEUED
    if word in _RUNNING:
        return JobState.RUNNING
    if word in _FAILED:
        return JobState.FAILED
    if word in _CANCELLED:
        return JobState.CANCELLED
    return JobState.UNKNOWN


_SHORT = {
    "PD": "PENDING",
    "R": "RUNNING",
    "CG": "COMPLETING",
    "CD": "COMPLETED",
    "F": "FAILED",
    "CA": "CANCELLED",
    "TO": "TIMEOUT",
    "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY",
    "PR": "PREEMPTED",
    "BF": "BOOT_FAIL",
    "DL": "DEADLINE",
    "S": "SUSPENDED",
    "CF": "CONFIGURING",
}


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """One job as Slurm reports it. Times are whole Unix seconds (1 s precision).

    ``start_s`` is set only once the job was allocated (a pending job's start time is a
    forecast, a job cancelled while pending gets its cancel time) and ``end_s`` only once
    it is terminal (a running job's end time is its start plus the time limit).
    """

    job_id: str
    state: str
    name: str = ""
    submit_s: int | None = None
    eligible_s: int | None = None
    start_s: int | None = None
    end_s: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str = ""

    @property
    def normalised(self) -> JobState:
        return job_state(self.state)

    def status(self) -> JobStatus:
        """The backend-neutral status, with a message naming Slurm's own state."""
        st = self.normalised
        msg = ""
        if st in (JobState.FAILED, JobState.CANCELLED, JobState.UNKNOWN):
            parts = [self.state]
            if self.signal:
                parts.append(f"signal {self.signal}")
            elif self.exit_code:
                parts.append(f"exit code {self.exit_code}")
            if self.reason and self.reason != "None":
                parts.append(f"reason {self.reason}")
            msg = ", ".join(parts)
        return JobStatus(st, msg, self.exit_code)


def _finish(
    job_id: str,
    state: str,
    name: str,
    times: tuple[int | None, int | None, int | None, int | None],
    allocated: bool,
    exit_signal: tuple[int | None, int | None],
    reason: str,
) -> SlurmJob:
    submit, eligible, start, end = times
    st = job_state(state)
    ran = allocated and st is not JobState.QUEUED
    return SlurmJob(
        job_id=job_id,
        state=state,
        name=name,
        submit_s=submit,
        eligible_s=eligible,
        start_s=start if ran else None,
        end_s=end if st.terminal else None,
        exit_code=exit_signal[0],
        signal=exit_signal[1],
        reason=reason,
    )


# ---- squeue --json ---------------------------------------------------------------------


def _num(v: Any) -> int | None:
    """An integer field: plain (22.05) or ``{"set": .., "number": ..}`` (23.02+)."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite", False):
            return None
        v = v.get("number")
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return int(v)


def _time(v: Any) -> int | None:
    t = _num(v)
    return t if t is not None and t > 0 else None


def _json_state(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return "COMPLETING" if "COMPLETING" in v[1:] else str(v[0])
    raise SlurmParseError(f"job_state is {v!r}, not a state name")


def _json_exit(v: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) from a raw wait status (22.05) or an exit-code object."""
    if isinstance(v, dict):
        sig = v.get("signal")
        signal = _num(sig.get("id")) if isinstance(sig, dict) else None
        return _num(v.get("return_code")), signal or None
    status = _num(v)
    if status is None:
        return None, None
    if status & 0x7F:
        return None, status & 0x7F
    return (status >> 8) & 0xFF, None


def parse_squeue_json(
    text: str | bytes, source: str = "squeue --json", arrays: Container[str] = ()
) -> dict[str, SlurmJob]:
    """Every job of a ``squeue --json`` reply (or of slurmrestd's ``/jobs``, the same
    document), keyed by job id (as a string); ``source`` names it in errors.

    Array tasks are also keyed ``A_i``, but only for the array ids in ``arrays`` (the
    ones gridbench submitted): anyone else's arrays are neither expanded nor checked. An
    array whose pending tasks ended together (cancelled whole) lists no task: its record
    is keyed ``A_*``, standing for every task not listed on its own."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SlurmParseError(f"{source} did not answer JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise SlurmParseError(f"{source} answered JSON without a 'jobs' list")
    errors = doc.get("errors") or []
    if errors:
        raise SlurmParseError(f"{source} reported errors: {describe_errors(errors)}")
    out: dict[str, SlurmJob] = {}
    for n, j in enumerate(doc["jobs"]):
        if not isinstance(j, dict):
            raise SlurmParseError(f"{source} job #{n} is not an object")
        jid = _num(j.get("job_id"))
        if jid is None:
            raise SlurmParseError(f"{source} job #{n} has no job_id")
        allocated = bool(j.get("nodes") or j.get("batch_host"))
        rec = _finish(
            str(jid),
            _json_state(j.get("job_state")),
            str(j.get("name") or ""),
            (
                _time(j.get("submit_time")),
                _time(j.get("eligible_time")),
                _time(j.get("start_time")),
                _time(j.get("end_time")),
            ),
            allocated,
            _json_exit(j.get("exit_code")),
            str(j.get("state_reason") or ""),
        )
        array = _num(j.get("array_job_id")) or 0
        if array and str(array) in arrays:
            keys = array_keys(array, j.get("array_task_id"), j.get("array_task_string"))
            for key in keys:
                out[key] = replace(rec, job_id=key)
            if not keys:  # a pending array cancelled whole: one record for its tasks
                out[f"{array}_*"] = rec
        out[str(jid)] = rec
    return out


# squeue -O fields for the text status path; Name last, since only it may hold a "|"
SQUEUE_FIELDS = (
    "JobID",
    "ArrayJobID",
    "ArrayTaskID",
    "State",
    "SubmitTime",
    "EligibleTime",
    "StartTime",
    "EndTime",
    "exit_code",
    "NodeList",
    "Reason",
    "Name",
)
SQUEUE_FORMAT = ",".join(f"{f}:|" for f in SQUEUE_FIELDS)


def parse_squeue_text(
    text: str, tz: tzinfo | None = None, arrays: Container[str] = ()
) -> dict[str, SlurmJob]:
    """Jobs of ``squeue -h -t all -O SQUEUE_FORMAT`` (``|``-separated lines), keyed like
    :func:`parse_squeue_json`; about five times cheaper than ``--json`` for slurmctld and
    the client, with the same fields at the same 1 s precision (times in cluster time)."""
    out: dict[str, SlurmJob] = {}
    n = len(SQUEUE_FIELDS)
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split("|", n - 1)
        if len(cells) != n:
            raise SlurmParseError(f"squeue line has {len(cells)} of {n} fields: {line[:120]!r}")
        f = dict(zip(SQUEUE_FIELDS, (c.strip() for c in cells), strict=True))
        jid, array, task = f["JobID"], f["ArrayJobID"], f["ArrayTaskID"]
        own = jid if jid.isdigit() else None
        if own is None and not (array.isdigit() and array in arrays):
            continue  # someone else's pending array (1_[2-5]): not ours to track
        rec = _finish(
            own or jid,
            f["State"],
            f["Name"].rstrip("|"),
            (
                _local_time(f["SubmitTime"], tz),
                _local_time(f["EligibleTime"], tz),
                _local_time(f["StartTime"], tz),
                _local_time(f["EndTime"], tz),
            ),
            _allocated(f["NodeList"]),
            _json_exit(int(f["exit_code"]) if f["exit_code"].isdigit() else None),
            f["Reason"],
        )
        if array.isdigit() and array in arrays:
            digit = task.isdigit()
            keys = array_keys(int(array), int(task) if digit else None, None if digit else task)
            for key in keys:
                out[key] = replace(rec, job_id=key)
            if not keys:
                out[f"{array}_*"] = rec
        if own is not None:
            out[own] = rec
    return out


def array_keys(array_job: int, task: Any, pending: Any) -> list[str]:
    """The ``A_i`` ids a job record stands for: one array task, the still-pending tasks of
    an array's meta record (``array_task_string`` such as ``3,5-9%2``), or none."""
    if array_job <= 0:
        return []
    index = _num(task)
    if index is not None:
        return [f"{array_job}_{index}"]
    return [f"{array_job}_{i}" for i in expand_task_string(str(pending or ""))]


def expand_task_string(text: str, limit: int = 1_000_000) -> list[int]:
    """Task indices of ``0-9``, ``1,3,5-7``, ``0-9:2`` or ``0-9%4`` (throttle dropped)."""
    out: list[int] = []
    for part in text.split("%", 1)[0].split(","):
        part = part.strip()
        if not part:
            continue
        rng, _, step_s = part.partition(":")
        lo_s, _, hi_s = rng.partition("-")
        try:
            lo, hi, step = int(lo_s), int(hi_s or lo_s), int(step_s or 1)
        except ValueError:
            raise SlurmParseError(f"array task string {text[:80]!r} is not like 0-9,12") from None
        if step < 1 or hi < lo or len(out) + (hi - lo) // step >= limit:
            raise SlurmParseError(f"array task string {text[:80]!r} is out of range")
        out.extend(range(lo, hi + 1, step))
    return out


def describe_errors(errors: Any) -> str:
    """The `errors` list of a Slurm JSON reply as one short line."""
    if not isinstance(errors, list):
        return str(errors)[:300]
    parts = []
    for e in errors:
        if not isinstance(e, dict):
            parts.append(str(e)[:200])
            continue
        text = str(e.get("description") or e.get("error") or e)[:200]
        if e.get("source"):
            text = f"{e['source']}: {text}"
        if e.get("error") and e.get("description"):
            text += f" ({e['error']})"
        parts.append(text)
    return "; ".join(parts)


# ---- scontrol show job -o and sacct -P -------------------------------------------------

_KEY = re.compile(r"(?:^|\s)([A-Za-z][\w:/]*)=")


def _fields(line: str) -> dict[str, str]:
    """``Key=Value Key=Value`` pairs of one ``scontrol -o`` line."""
    marks = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    if not marks:
        return out
    for a, b in zip(marks, [*marks[1:], None], strict=True):
        end = b.start() if b is not None else len(line)
        out.setdefault(a.group(1), line[a.end() : end].strip())
    return out


def _local_time(v: str, tz: tzinfo | None) -> int | None:
    """A Slurm ``YYYY-MM-DDTHH:MM:SS`` (local time of the cluster) as Unix seconds."""
    v = v.strip()
    if not v or not v[0].isdigit():
        return None  # Unknown, None, N/A
    try:
        dt = datetime.fromisoformat(v)
    except ValueError:
        raise SlurmParseError(f"{v!r} is not a Slurm time") from None
    aware = dt if dt.tzinfo else (dt.replace(tzinfo=tz) if tz else dt.astimezone())
    return int(aware.timestamp())


def _colon_exit(v: str) -> tuple[int | None, int | None]:
    code, _, sig = v.partition(":")
    try:
        c, s = int(code), int(sig or 0)
    except ValueError:
        return None, None
    return (None, s) if s else (c, None)  # like a wait status: a signal has no exit code


def _allocated(v: str) -> bool:
    return bool(v) and v not in ("(null)", "None", "None assigned")


def parse_scontrol_jobs(
    text: str, tz: tzinfo | None = None, arrays: Container[str] = ()
) -> dict[str, SlurmJob]:
    """Jobs of ``scontrol show job -o`` (one line per job), keyed by job id; tasks of the
    arrays in ``arrays`` also as ``A_i``."""
    out: dict[str, SlurmJob] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        f = _fields(line)
        jid = f.get("JobId", "")
        if not jid.isdigit() or "JobState" not in f:
            raise SlurmParseError(f"scontrol line without JobId/JobState: {line[:120]!r}")
        rec = _finish(
            jid,
            f["JobState"],
            f.get("JobName", ""),
            (
                _local_time(f.get("SubmitTime", ""), tz),
                _local_time(f.get("EligibleTime", ""), tz),
                _local_time(f.get("StartTime", ""), tz),
                _local_time(f.get("EndTime", ""), tz),
            ),
            _allocated(f.get("BatchHost", "")) or _allocated(f.get("NodeList", "")),
            _colon_exit(f.get("ExitCode", "")),
            f.get("Reason", ""),
        )
        array, task = f.get("ArrayJobId", ""), f.get("ArrayTaskId", "")
        if array in arrays:
            digit = task.isdigit()
            for key in array_keys(
                int(array), int(task) if digit else None, None if digit else task
            ):
                out[key] = replace(rec, job_id=key)
        out[jid] = rec
    return out


_SACCT_ID = re.compile(r"^\d+(?:_\d+)?$")  # a job, or an array task A_i
SACCT_FORMAT = "JobID,JobName,State,Submit,Eligible,Start,End,ExitCode,NodeList,Reason"


def parse_sacct(text: str, tz: tzinfo | None = None) -> dict[str, SlurmJob]:
    """Jobs of ``sacct -X -P --format=SACCT_FORMAT`` (with its header line)."""
    lines = [x for x in text.splitlines() if x.strip()]
    if not lines:
        return {}
    head = lines[0].split("|")
    need = ("JobID", "State", "Submit", "Eligible", "Start", "End", "ExitCode")
    if not all(k in head for k in need):
        raise SlurmParseError(f"sacct header {lines[0][:120]!r} lacks one of {need}")
    out: dict[str, SlurmJob] = {}
    for line in lines[1:]:
        cells = line.split("|")
        if len(cells) != len(head):
            raise SlurmParseError(f"sacct line has {len(cells)} fields: {line[:120]!r}")
        f = dict(zip(head, cells, strict=True))
        jid = f["JobID"]
        if not _SACCT_ID.match(jid):
            continue  # steps (12.batch) and a pending array's A_[3-9] are not tracked ids
        out[jid] = _finish(
            jid,
            f["State"],
            f.get("JobName", ""),
            (
                _local_time(f["Submit"], tz),
                _local_time(f["Eligible"], tz),
                _local_time(f["Start"], tz),
                _local_time(f["End"], tz),
            ),
            _allocated(f.get("NodeList", "")),
            _colon_exit(f["ExitCode"]),
            f.get("Reason", ""),
        )
    return out


# ---- sbatch -----------------------------------------------------------------------------

_PARSABLE = re.compile(r"^(\d+)(?:;\S+)?$")


def parse_sbatch_id(stdout: str) -> str:
    """The job id from ``sbatch --parsable`` (``123`` or ``123;cluster``)."""
    for line in reversed(stdout.strip().splitlines()):
        m = _PARSABLE.match(line.strip())
        if m:
            return m.group(1)
    raise SlurmParseError(f"sbatch --parsable printed no job id: {stdout.strip()[:200]!r}")


def sbatch_message(stderr: str) -> str:
    """sbatch's error lines, without the ``sbatch: error:`` prefixes, joined by '; '."""
    lines = []
    for raw in stderr.splitlines():
        line = raw.strip()
        for prefix in ("sbatch: error: ", "sbatch: fatal: ", "sbatch: "):
            if line.startswith(prefix):
                line = line[len(prefix) :]
                break
        if line:
            lines.append(line)
    return "; ".join(lines) or "sbatch failed without a message"


def sbatch_failure_kind(stderr: str) -> str:
    """Which FAIL_SUBMIT_* kind an sbatch failure is.

    The controller refusing the job (``Batch job submission failed: <reason>``, or the
    client-side partition check) is a rejection; a time-out talking to it is a time-out;
    anything else (unreachable controller, bad configuration) is an error.
    """
    low = stderr.lower()
    if "timed out" in low:
        return FAIL_SUBMIT_TIMEOUT
    if "unable to contact slurm controller" in low or "connection refused" in low:
        return FAIL_SUBMIT_ERROR
    if "batch job submission failed" in low or "invalid partition" in low:
        return FAIL_SUBMIT_REJECTED
    return FAIL_SUBMIT_ERROR
