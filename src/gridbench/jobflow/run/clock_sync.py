"""NTP-style clock-offset estimation between the controller and one agent (METHODS 1.12).

One probe is a four-timestamp exchange: the controller stamps ``t1`` when it asks, the agent
stamps ``t2`` when the request arrives and ``t3`` when it answers, and the controller stamps
``t4`` when the answer arrives. Then (RFC 5905)

    offset θ = ((t2 − t1) + (t3 − t4)) / 2      (agent clock − controller clock)
    delay  δ = (t4 − t1) − (t3 − t2)            (the round trip minus the agent's own time)

and the true offset lies within θ ± δ/2 whatever the asymmetry of the path. Of ~32 probes the
one with the smallest δ is kept, because queueing only ever adds delay (and error).

A stamp ``t`` taken on the agent's clock is ``t − θ`` on the controller's clock.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from gridbench.errors import GridbenchError

DEFAULT_PROBES = 32

# The agent's half of one exchange: returns (t2, t3) on the agent's clock, in ns.
Exchange = Callable[[], Awaitable[tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class OffsetEstimate:
    """The kept probe's offset and its bound, all in nanoseconds."""

    offset_ns: int  # agent clock − controller clock
    bound_ns: int  # |error| <= bound: half the kept probe's round-trip delay
    delay_ns: int  # the kept probe's round-trip delay δ
    probes: int  # probes taken
    at_ns: int  # controller time of the kept probe's midpoint

    def to_dict(self) -> dict[str, Any]:
        """The record written into trial.json."""
        return asdict(self)


def estimate(samples: Sequence[tuple[int, int, int, int]]) -> OffsetEstimate:
    """The minimum-delay estimate from ``(t1, t2, t3, t4)`` samples (pure); inconsistent
    probes (a clock stepped during them) are ignored, and none left is an error."""
    if not samples:
        raise GridbenchError(
            "no clock probe answered",
            fix="check that the agent is reachable from the controller",
        )
    t = np.asarray(samples, dtype=np.int64)
    t1, t2, t3, t4 = t[:, 0], t[:, 1], t[:, 2], t[:, 3]
    delay = (t4 - t1) - (t3 - t2)
    # A probe whose answer left before its request arrived (t3 < t2), that came back before
    # it was sent (t4 < t1), or whose agent took longer than the round trip (δ < 0) saw a
    # clock step mid-probe: it says nothing about the offset.
    sane = (t3 >= t2) & (t4 >= t1) & (delay >= 0)
    if not sane.any():
        raise GridbenchError(
            f"none of the {len(samples)} clock probes is consistent (a clock stepped during "
            "every exchange, or the agent's stamps are not wall-clock nanoseconds)",
            fix="check that the agent answers with time.time_ns() stamps (t2, t3), and that "
            "no clock is being stepped on the controller or the agent",
        )
    best = int(np.argmin(np.where(sane, delay, np.iinfo(np.int64).max)))
    # int64 halves: exact to 1 ns, no float rounding of epoch-sized values
    offset = ((t2[best] - t1[best]) + (t3[best] - t4[best])) // 2
    d = max(int(delay[best]), 0)
    return OffsetEstimate(
        offset_ns=int(offset),
        bound_ns=(d + 1) // 2,
        delay_ns=d,
        probes=len(samples),
        at_ns=int(t1[best] + (t4[best] - t1[best]) // 2),
    )


async def measure(exchange: Exchange, probes: int = DEFAULT_PROBES) -> OffsetEstimate:
    """Run ``probes`` exchanges with one agent and keep the minimum-delay one."""
    samples: list[tuple[int, int, int, int]] = []
    for _ in range(probes):
        t1 = time.time_ns()
        t2, t3 = await exchange()
        t4 = time.time_ns()
        samples.append((t1, int(t2), int(t3), t4))
    return estimate(samples)


def drift_ppm(before: OffsetEstimate, after: OffsetEstimate) -> float | None:
    """How fast the agent's clock ran away from the controller's between two estimates,
    in parts per million (None when the estimates are at the same instant)."""
    span = after.at_ns - before.at_ns
    if span <= 0:
        return None
    return (after.offset_ns - before.offset_ns) / span * 1e6


def agent_half() -> tuple[int, int]:
    """The agent's side of an exchange when it answers in one call: (t2, t3)."""
    t2 = time.time_ns()
    return t2, time.time_ns()
