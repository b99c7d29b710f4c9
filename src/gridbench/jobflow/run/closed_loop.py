"""What the closed-loop load models (sustain, batch, probe) share when they run.

Timed operations other than submission (status queries, probe calls) are recorded as
``op_start``/``op_end`` event pairs on a pseudo-job ``<trial>-op-<agent>-<seq>`` with
``attrs.op`` naming the operation. The runners themselves are in
:mod:`gridbench.jobflow.loads` (one module per model).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from gridbench.jobflow.run.recorder import Recorder

T = TypeVar("T")

STAGE_OP_START = "op_start"
STAGE_OP_END = "op_end"


class OpNames:
    """Names of the pseudo-jobs that carry timed operations, unique within a trial."""

    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id
        self.seq = 0

    def name(self, agent: str) -> str:
        """The next operation's name for ``agent``."""
        self.seq += 1
        return f"{self.trial_id}-op-{agent}-{self.seq:06d}"


async def sleep_or_stop(seconds: float, stop: asyncio.Event, deadline: float) -> None:
    """Sleep ``seconds`` (never past ``deadline``, a perf_counter time) or until stopped."""
    seconds = min(seconds, max(0.0, deadline - time.perf_counter()))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def timed_op(
    rec: Recorder,
    op: str,
    start: dict[str, Any],
    end: dict[str, Any],
    call: Awaitable[T],
    *,
    durable: bool = False,
) -> T | None:
    """Await ``call`` between an ``op_start`` (attrs ``start``) and an ``op_end`` stamp
    (attrs ``end``, plus the ``error`` cut to 200 characters when it raised: ``None``).
    ``durable``: the ``op_start`` reaches the log file before ``call`` starts, for a call
    that makes something lasting (a reservation) that ``cleanup`` must find after a kill."""
    rec.stamp(op, STAGE_OP_START, None, start)
    if durable:
        rec.log.flush()
    try:
        result = await call
    except Exception as exc:  # a failed call is a recorded exception, not a crash
        rec.stamp(op, STAGE_OP_END, None, {**end, "error": str(exc)[:200]})
        return None
    rec.stamp(op, STAGE_OP_END, None, end)
    return result
