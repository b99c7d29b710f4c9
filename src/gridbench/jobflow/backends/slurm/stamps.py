"""One server stamp per (job, stage) for the Slurm chain, from two sources of different
precision.

The slurmctld log (``LogTimeFormat=iso8601_ms``) gives ``slurm_submit``, ``slurm_start``
and ``slurm_end`` to the millisecond; squeue/scontrol/sacct give all four stages to the
second. **The log stamp wins** whenever the log has the line: it is emitted as soon as it
is read (so even a job that never ends keeps its submit stamp). When a job is seen to end,
the whole-second record fills in every stage the log did not give, kept in chain order:

- a job eligible in the second it was submitted gets the log's submit stamp as its
  eligible time, at 1 ms (``attrs.same_as``): without a hold or dependency Slurm sets the
  eligible time while it creates the job, inside the submit RPC the log line ends;
- a whole second is a truncation, and a log line is written a little after the fact (the
  submit line ends the RPC), so a whole-second stamp may fall up to a second (plus
  ``LOG_LAG_NS``) before the millisecond stamp of an earlier stage; it is then raised to
  that stamp (``attrs.clamped``).

Emitting both stamps of a stage would be wrong: the analysis keeps the earliest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gridbench.jobflow.backends.slurm.ctld_log import (
    STAGE_ELIGIBLE,
    STAGE_END,
    STAGE_START,
    STAGE_SUBMIT,
    LogStamp,
)
from gridbench.jobflow.backends.slurm.parse import SlurmJob
from gridbench.jobflow.events.model import Event, Precision

SERVER_STAGES = (STAGE_SUBMIT, STAGE_ELIGIBLE, STAGE_START, STAGE_END)
SOURCE = "slurmctld"
AGENT = "slurm"
UNCLAIMED_KEEP_NS = 600 * 1_000_000_000  # log stamps of ids not (yet) ours are kept this long
LOG_LAG_NS = 100_000_000  # how much later than the fact a log line may be written


@dataclass(slots=True)
class _Job:
    emitted: dict[str, int] = field(default_factory=dict)
    logged: set[str] = field(default_factory=set)  # stages stamped from the log (1 ms)
    record: tuple[SlurmJob, str] | None = None


class StampBook:
    """Collects log stamps and job records; :meth:`drain` returns the events to record."""

    def __init__(self) -> None:
        self._jobs: dict[str, _Job] = {}
        self._arrays: dict[str, set[str]] = {}  # array job id -> its watched A_i tasks
        self._unclaimed: dict[str, list[LogStamp]] = {}
        self._out: list[Event] = []
        self._newest_ns = 0

    def watch(self, job_id: str) -> None:
        """Start collecting stamps of ``job_id`` (call when sbatch returns its id)."""
        if job_id in self._jobs:
            return
        self._jobs[job_id] = _Job()
        for s in self._unclaimed.pop(job_id, ()):
            self._log_stamp(s)
        array, sep, _ = job_id.partition("_")
        if sep:  # an array task: the array's one submit line stamps every task
            self._arrays.setdefault(array, set()).add(job_id)
            for s in self._unclaimed.get(array, ()):
                self._log_stamp(replace(s, job_id=job_id))

    def watching(self, job_id: str) -> bool:
        return job_id in self._jobs

    def add_log(self, stamps: list[LogStamp]) -> None:
        """Log stamps, in log order; those of jobs not watched yet are kept a while.

        The submit line is written before sbatch gets its answer, so it may be read before
        :meth:`watch` is called for that id.
        """
        for s in stamps:
            self._newest_ns = max(self._newest_ns, s.t_ns)
            if s.job_id in self._jobs:
                self._log_stamp(s)
            elif s.job_id in self._arrays:
                for task in self._arrays[s.job_id]:
                    if task in self._jobs:
                        self._log_stamp(replace(s, job_id=task))
            else:
                self._unclaimed.setdefault(s.job_id, []).append(s)
        if len(self._unclaimed) > 1024:
            horizon = self._newest_ns - UNCLAIMED_KEEP_NS
            self._unclaimed = {
                k: v for k, v in self._unclaimed.items() if v and v[-1].t_ns >= horizon
            }

    def _log_stamp(self, s: LogStamp) -> None:
        job = self._jobs[s.job_id]
        if s.stage in job.emitted:
            return  # first line wins (a requeued job logs a second allocation)
        job.emitted[s.stage] = s.t_ns
        job.logged.add(s.stage)
        attrs = {"from": "log"}
        self._out.append(Event(s.job_id, s.stage, s.t_ns, SOURCE, Precision.MS, AGENT, 0, attrs))

    def add_final(self, job: SlurmJob, origin: str) -> None:
        """The record of a job Slurm reports as ended; its stamps go out on the next drain.

        Deferred because the log lines of its last stages may not have been read yet.
        """
        entry = self._jobs.get(job.job_id)
        if entry is not None and entry.record is None:
            entry.record = (job, origin)

    def drain(self) -> list[Event]:
        """Events ready since the last drain; ended jobs are then forgotten."""
        finished = [k for k, j in self._jobs.items() if j.record is not None]
        for jid in finished:
            self._fill(jid, self._jobs.pop(jid))
            array, sep, _ = jid.partition("_")
            if sep and array in self._arrays:
                self._arrays[array].discard(jid)
                if not self._arrays[array]:
                    del self._arrays[array]
        out, self._out = self._out, []
        return out

    def _fill(self, jid: str, job: _Job) -> None:
        assert job.record is not None
        rec, origin = job.record
        secs = {
            STAGE_SUBMIT: rec.submit_s,
            STAGE_ELIGIBLE: rec.eligible_s,
            STAGE_START: rec.start_s,
            STAGE_END: rec.end_s,
        }
        prev: int | None = None
        for stage in SERVER_STAGES:
            if stage in job.emitted:
                prev = job.emitted[stage]
                continue
            s = secs[stage]
            if s is None:
                continue
            t, prec = s * 1_000_000_000, Precision.S
            attrs: dict[str, object] = {"from": origin}
            if stage == STAGE_ELIGIBLE and s == rec.submit_s and STAGE_SUBMIT in job.logged:
                t, prec, attrs["same_as"] = job.emitted[STAGE_SUBMIT], Precision.MS, STAGE_SUBMIT
            elif prev is not None and t < prev < t + Precision.S + LOG_LAG_NS:
                t, attrs["clamped"] = prev, True
            self._out.append(Event(jid, stage, t, SOURCE, prec, AGENT, 0, attrs))
            job.emitted[stage] = prev = t
