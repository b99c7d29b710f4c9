"""Server stamps that arrive before their submit call returns are kept, not dropped."""

from __future__ import annotations

from pathlib import Path

from gridbench.jobflow.backends.base import Capabilities, JobState, JobStatus
from gridbench.jobflow.events.clock import AnchoredClock
from gridbench.jobflow.events.log import EventLog, read_events
from gridbench.jobflow.events.model import Event
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.run.recorder import Recorder
from gridbench.jobflow.run.tracker import UNMATCHED_CAP, StatusTracker


class EarlyStamps:
    """A backend whose stamps are handed out before the runner knows the job's id (as
    PSI/J's callback thread can do)."""

    name = "early"

    def __init__(self) -> None:
        self.pending: list[Event] = []

    def capabilities(self) -> Capabilities:
        return Capabilities(server_events=True)

    async def server_events(self) -> list[Event]:
        out, self.pending = self.pending, []
        return out

    async def status(self, ids: list[str]) -> dict[str, JobStatus]:
        return {i: JobStatus(JobState.DONE) for i in ids}


def _tracker(tmp_path: Path, backend: EarlyStamps) -> tuple[StatusTracker, EventLog]:
    elog = EventLog(tmp_path / "events.csv")
    rec = Recorder(elog, AnchoredClock())
    progress = TrialProgress("t1", planned=1)
    return StatusTracker(backend, rec, progress, 0.1), elog  # type: ignore[arg-type]


async def test_a_stamp_before_the_ack_is_kept(tmp_path: Path) -> None:
    b = EarlyStamps()
    tracker, elog = _tracker(tmp_path, b)
    b.pending.append(Event("native-7", "x_queued", 1_000, "x", 1_000))
    await tracker.sweep()  # the id is not known yet
    assert tracker.unmatched == 1
    tracker.add("native-7", "gb-job-1")
    b.pending.append(Event("native-7", "x_end", 2_000, "x", 1_000))
    await tracker.sweep()
    elog.close()
    ev = read_events(tmp_path / "events.csv")
    assert ev.filter(ev["source"] == "x").select("job", "stage").rows() == [
        ("gb-job-1", "x_queued"),
        ("gb-job-1", "x_end"),
    ]
    assert tracker.unmatched == 0 and tracker.unmatched_dropped == 0


async def test_stamps_for_foreign_ids_stay_bounded(tmp_path: Path) -> None:
    b = EarlyStamps()
    tracker, elog = _tracker(tmp_path, b)
    b.pending.extend(Event(f"other-{k}", "x_queued", k, "x", 1) for k in range(UNMATCHED_CAP + 5))
    await tracker.sweep()
    elog.close()
    assert tracker.unmatched == UNMATCHED_CAP and tracker.unmatched_dropped == 5


async def test_on_end_callbacks_see_each_ended_job_once_after_its_stamps(tmp_path: Path) -> None:
    tracker, elog = _tracker(tmp_path, EarlyStamps())
    for k in range(4):
        tracker.add(f"b{k}", f"gb-{k}")
    seen: list[tuple[str, JobState, int]] = []
    tracker.on_end.append(lambda job, st: seen.append((job, st, elog.count)))
    states = {
        "b0": JobStatus(JobState.DONE),
        "b1": JobStatus(JobState.FAILED, "boom"),
        "b2": JobStatus(JobState.CANCELLED),
        "b3": JobStatus(JobState.RUNNING),
        "stranger": JobStatus(JobState.DONE),  # not ours: no callback
    }
    await tracker.observe(states)
    await tracker.observe(states)  # already ended: not again
    assert [(j, s) for j, s, _ in seen] == [
        ("gb-0", JobState.DONE),
        ("gb-1", JobState.FAILED),
        ("gb-2", JobState.CANCELLED),
    ]
    assert [n for _, _, n in seen] == [1, 3, 4]  # called after the job's stamps
    tracker.on_end.clear()
    await tracker.observe({"b3": JobStatus(JobState.DONE)})
    assert len(seen) == 3 and not tracker.inflight
    elog.close()
