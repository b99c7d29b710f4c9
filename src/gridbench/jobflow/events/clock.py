"""Client clock: wall-clock nanoseconds anchored to the monotonic clock.

Wall time can jump (NTP steps); the monotonic clock cannot. We read the wall clock once
at construction and advance it with the monotonic clock, so intervals are exact and stamps
stay comparable with server stamps taken on the same host.
"""

from __future__ import annotations

import time


class AnchoredClock:
    """Nanosecond wall-clock stamps that never go backwards."""

    #: resolution of the stamps this clock produces, in ns (perf_counter is sub-microsecond)
    precision_ns = 1_000

    def __init__(self) -> None:
        self._wall0 = time.time_ns()
        self._mono0 = time.perf_counter_ns()

    def now_ns(self) -> int:
        """Current time in ns since the epoch, advanced monotonically."""
        return self._wall0 + (time.perf_counter_ns() - self._mono0)

    def mono_to_wall(self, mono_ns: int) -> int:
        """Convert a ``perf_counter_ns`` reading to anchored wall time."""
        return self._wall0 + (mono_ns - self._mono0)

    @property
    def shift_ns(self) -> int:
        """Anchored wall time minus ``perf_counter_ns``: a hot loop that reads the
        monotonic clock itself stamps ``perf_counter_ns() + shift_ns`` (= :meth:`now_ns`)."""
        return self._wall0 - self._mono0

    def wall_to_mono(self, wall_ns: int) -> int:
        """Convert an anchored wall time to the ``perf_counter_ns`` timeline."""
        return self._mono0 + (wall_ns - self._wall0)
