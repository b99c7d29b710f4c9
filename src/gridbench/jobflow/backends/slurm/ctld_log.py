"""The Slurm chain's server stages, and the slurmctld log lines that stamp them to the
millisecond (pure: the file is read by :mod:`.log`).

A log stamp of ``slurm_submit``, ``slurm_start`` or ``slurm_end`` is finer than the
whole-second times squeue/sacct give; ``slurm_eligible`` only comes from those.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

STAGE_SUBMIT = "slurm_submit"
STAGE_ELIGIBLE = "slurm_eligible"
STAGE_START = "slurm_start"
STAGE_END = "slurm_end"

# a plain job (JobId=401, then no word character) or an array task
# (JobId=401_3(404): array 401, task 3, own id 404)
_JOBID = r"JobId=(\d+)(?:_(\d+)\((\d+)\)|(?!\w))"
_LOG_EVENTS = (
    (re.compile(r"_slurm_rpc_submit_batch_job: " + _JOBID), STAGE_SUBMIT),
    (re.compile(r"sched: Allocate " + _JOBID), STAGE_START),
    (re.compile(r"backfill: Started " + _JOBID), STAGE_START),
    (re.compile(r"_job_complete: " + _JOBID + r" done\b"), STAGE_END),
)
_MS_STAMP = re.compile(
    r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})(Z|[+-]\d\d:?\d\d)?\] (.*)$",
)


@dataclass(frozen=True, slots=True)
class LogStamp:
    """A millisecond stamp of one job's stage, from one slurmctld log line."""

    job_id: str
    stage: str
    t_ns: int


def parse_log_line(line: str, tz: tzinfo | None = None) -> LogStamp | None:
    """The stage stamp in one slurmctld log line, or None.

    Only ``LogTimeFormat=iso8601_ms`` (local time, ``[2026-11-22T07:21:42.972]``) and
    ``rfc5424_ms`` (with an offset) lines count: a whole-second log adds nothing over
    squeue. ``tz`` is the controller's time zone for offset-less stamps (None: local).
    """
    if "JobId=" not in line:
        return None
    m = _MS_STAMP.match(line.rstrip("\n"))
    if m is None:
        return None
    stamp, offset, msg = m.groups()
    for pattern, stage in _LOG_EVENTS:
        hit = pattern.search(msg)
        if hit is None:
            continue
        # an array task is logged as JobId=A_i(own id): keep the A_i gridbench tracks
        jid = f"{hit.group(1)}_{hit.group(2)}" if hit.group(2) else hit.group(1)
        try:
            dt = datetime.fromisoformat(stamp + (offset or ""))
        except ValueError:
            return None
        aware = dt if dt.tzinfo else (dt.replace(tzinfo=tz) if tz else dt.astimezone())
        us = (aware - _EPOCH) // timedelta(microseconds=1)
        return LogStamp(jid, stage, us * 1000)
    return None


def parse_log(lines: Iterable[str], tz: tzinfo | None = None) -> list[LogStamp]:
    """Every stage stamp in ``lines``, in order."""
    out = []
    for line in lines:
        s = parse_log_line(line, tz)
        if s is not None:
            out.append(s)
    return out
