"""Live progress of remote agents: counters and per-interval HDR histograms of submit
latency (submit → submit_ack), recorded by each agent and merged by the controller.

The histograms are for the dashboard's live view only; the final analysis reads the raw
events, never these (percentiles are not averaged, histograms are added).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

from hdrh.histogram import HdrHistogram  # type: ignore[import-untyped]  # no stubs

from gridbench.jobflow.events.model import STAGE_SUBMIT, STAGE_SUBMIT_ACK
from gridbench.jobflow.run.observer import TrialProgress
from gridbench.jobflow.run.recorder import Recorder

LOWEST_NS: Final = 1
HIGHEST_NS: Final = 3_600_000_000_000
DIGITS: Final = 3
COUNTERS: Final = ("submitted", "acknowledged", "completed", "failed", "dropped", "late")


def new_histogram() -> HdrHistogram:
    """An empty histogram of ns latencies (3 significant digits)."""
    return HdrHistogram(LOWEST_NS, HIGHEST_NS, DIGITS)


class LiveRecorder(Recorder):
    """A recorder that also puts each job's submit latency into the current histogram."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hist = new_histogram()
        self._lock = threading.Lock()  # the trial records in its thread, pulls read in another
        self._submit: dict[str, int] = {}

    def stamped(self, job: str, stage: str, t_ns: int) -> None:
        """A submit_ack adds its job's submit latency to the histogram."""
        if stage == STAGE_SUBMIT:
            self._submit[job] = t_ns
        elif stage == STAGE_SUBMIT_ACK and job in self._submit:
            lat = t_ns - self._submit.pop(job)
            with self._lock:
                self.hist.record_value(min(max(lat, LOWEST_NS), HIGHEST_NS))

    def snapshot(self, progress: TrialProgress) -> dict[str, Any]:
        """Counters so far and the histogram since the previous snapshot (then reset)."""
        with self._lock:
            hist, self.hist = self.hist, new_histogram()
        encoded = hist.encode() if hist.get_total_count() else b""
        out: dict[str, Any] = {k: getattr(progress, k) for k in COUNTERS}
        out["in_flight"] = progress.in_flight
        out["phase"] = progress.phase
        out["hist"] = encoded
        return out


def merge_live(
    progress: TrialProgress, live: Mapping[str, Mapping[str, Any]], blobs: Iterable[bytes]
) -> None:
    """The controller's progress: the agents' counters summed, and the histograms ``blobs``
    (every agent's of the last second) added, shown as p50/p99/max submit latency (ms)."""
    for k in COUNTERS:
        setattr(progress, k, sum(int(v.get(k) or 0) for v in live.values()))
    progress.in_flight = sum(int(v.get("in_flight") or 0) for v in live.values())
    hist = _added(blobs)
    total = hist.get_total_count()
    progress.extra["submit_latency_ms"] = (
        {
            "count": total,
            "p50": hist.get_value_at_percentile(50) / 1e6,
            "p99": hist.get_value_at_percentile(99) / 1e6,
            "max": hist.get_max_value() / 1e6,
        }
        if total
        else None
    )
    progress.extra["agents"] = {
        name: {k: v.get(k) for k in (*COUNTERS, "in_flight", "phase")} for name, v in live.items()
    }


def _added(blobs: Iterable[Any]) -> HdrHistogram:
    h = new_histogram()
    for b in blobs:
        if b:
            h.decode_and_add(b)
    return h
