"""A sampled host's clock against the controller's: each sample placed on the controller's
clock, and a host clock that cannot be trusted named rather than believed.

A host's own time (``node_time_seconds``, the probe's ``host_t``) is foreign. One that is
more than :data:`MAX_SKEW_S` from the controller's (the bound ``hosts check --write`` keeps
too) is ``clock-absurd``: that sample is placed by the controller's clock and its host time
left out, so it can neither move the offset nor give a rate. One that steps (by more than
:data:`STEP_S` beyond what the round trip allows; a probe's line, by more than a line's
delay, :data:`MAX_DELAY_S`) is ``clock-step``: that sample is placed
by the controller's clock, its host time left out (no rate spans the step), and an
estimated offset starts again from the new clock. A host clock that runs fast or slow
gives no interval: the controller's is used (:func:`interval_s`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gridbench.hosts.sampling.figures import Problem

#: the farthest a host's clock may be from the controller's (a day, as the inventory's
#: ``clock_offset_ms``)
MAX_SKEW_S = 86_400.0
#: how far a host's clock may move against the controller's between samples, beyond the
#: round trip, before it counts as a step
STEP_S = 1.0
#: the longest a probe's line may take to arrive (SSH buffering) before its time counts as
#: a step back
MAX_DELAY_S = 5.0


@dataclass
class HostClock:
    """What is known of one host's clock: its offset (host minus controller, seconds) and
    where it comes from (``given``, ``controller``, ``exporter``, ``ssh``)."""

    host: str
    offset: float | None = None
    offset_from: str | None = None
    best_rtt: float = math.inf

    def _absurd(self, host_t: float, now: float) -> Problem | None:
        off = host_t - now - (self.offset or 0.0)
        if math.isfinite(off) and abs(off) <= MAX_SKEW_S:
            return None
        return Problem(
            "clock-absurd",
            f"the clock of {self.host} reads {host_t:.6g}, {off:+.3g} s from the "
            "controller's: its samples are placed by the controller's clock (fix the host's "
            "clock, e.g. with NTP)",
        )

    def _step(self, moved: float) -> Problem:
        self.best_rtt = math.inf
        return Problem(
            "clock-step",
            f"the clock of {self.host} stepped {moved:+.3f} s against the controller's: that "
            "sample is placed by the controller's clock and gives no rate",
        )

    def place_scrape(
        self, host_t: float | None, t_sent: float, t_received: float
    ) -> tuple[float, float | None, Problem | None]:
        """An exporter's scrape: its time on the controller's clock, its host time when
        usable (else None), and the problem with the host's clock, if any."""
        mid, rtt = (t_sent + t_received) / 2, t_received - t_sent
        if host_t is None:
            return mid, None, None
        bad = self._absurd(host_t, mid)
        if bad is not None:
            return mid, None, bad
        ours = self.offset_from in (None, "exporter", "ssh")  # a round trip beats one way
        if self.offset is not None or not ours:
            # checked against the offset known so far, before this scrape may refine it:
            # a step on the quickest scrape yet would otherwise become the offset unseen.
            # The offset is known within half the quickest round trip, this scrape within
            # half its own.
            t = host_t - (self.offset or 0.0)
            known = self.best_rtt if math.isfinite(self.best_rtt) else rtt
            if abs(t - mid) > (rtt + known) / 2 + STEP_S:
                step = self._step(t - mid)
                if ours:
                    self.best_rtt, self.offset = rtt, host_t - mid
                return mid, None, step
        if ours and rtt <= self.best_rtt:
            self.best_rtt, self.offset, self.offset_from = rtt, host_t - mid, "exporter"
        return host_t - (self.offset or 0.0), host_t, None

    def place_line(
        self, host_t: float | None, t_received: float
    ) -> tuple[float, float | None, Problem | None]:
        """A probe's line received at ``t_received``: as :meth:`place_scrape` (one way only:
        the line's delay makes ``host_t - t_received`` the offset's lower bound)."""
        if host_t is None:
            return t_received, None, None
        bad = self._absurd(host_t, t_received)
        if bad is not None:
            return t_received, None, bad
        est = host_t - t_received
        if self.offset_from in (None, "ssh"):
            # a quicker line raises the estimate a little; a jump of more than any line's
            # delay is the clock
            if self.offset is not None and est > self.offset + MAX_DELAY_S:
                moved, self.offset = est - self.offset, est
                return t_received, None, self._step(moved)
            if self.offset is None or est > self.offset:
                self.offset, self.offset_from = est, "ssh"
        t = host_t - (self.offset or 0.0)
        if t_received - MAX_DELAY_S <= t <= t_received + STEP_S:
            return t, host_t, None
        step = self._step(t - t_received)
        if self.offset_from == "ssh":
            self.offset = est
        return t_received, None, step


def interval_s(
    prev_host_t: float | None, host_t: float | None, prev_t: float, t: float, slack: float
) -> float:
    """The interval between two readings: the host's own when it agrees with the
    controller's (``t - prev_t``) within ``slack`` (the round trips' halves) and 5%, else
    the controller's: a host clock that runs fast or slow never scales the rates."""
    ours = t - prev_t
    if prev_host_t is None or host_t is None:
        return ours
    own = host_t - prev_host_t
    return own if abs(own - ours) <= slack + 0.05 * abs(ours) else ours
