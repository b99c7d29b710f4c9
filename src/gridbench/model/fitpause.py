"""The pause of a sequential status poller, fitted so it holds when a gap between two T7
stamps holds several calls.

A sequential poller (CREAM's UpdateManager, the reference grid's ``sequential``) takes
the CE's list at a pass's start (jobs past T3, not yet at T7, oldest first), calls once per
job (``cost`` each), stamps T7 for each job the bridge had finished (T6) by its call, then
pauses. The gaps between T7 stamps alone cannot tell the pause from the calls beside it:
the newest job, last in every pass, is never finished yet, so the shortest gap across a
pass's end is one call *plus* the pause plus the next job's call, and reading it as
"cost + pause" fits the pause one call too long (0.52 s for a 0.3 s pause at 0.22 s a
call). Every gap across a pass's end is ``pause + k * cost`` for some whole ``k``, so the
candidates are the first reading plus or less whole calls, then a finer grid around the
best; :func:`refine_pause` replays the poller from each measured T7 stamp to the next with
each candidate, from the stamps themselves (T3 the list, T6 when a call finds a job done),
and keeps the candidate whose replays land nearest the measured stamps.

The replay walks the poller a pass at a time (numpy over the pass's list); at most
``MAX_GAPS`` gaps per trial are replayed, evenly spread, so a long run costs no more.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
#: gaps replayed per trial (evenly spread over the trial)
MAX_GAPS = 150
#: candidates above the first reading, in whole calls
EXTRA_CALLS = 4
#: passes a replay may walk before it gives up on a gap (an idle list: pause after pause)
MAX_PASSES = 400


def refine_pause(
    listed: F64, ready: F64, done: F64, trial: NDArray[np.int64], cost: float, first: float
) -> float:
    """The pause whose replays of the poller best match the measured T7 stamps ``done``:
    first among ``first`` plus or less whole calls (up to ``EXTRA_CALLS`` more: a late
    wake-up of a loaded poller makes a gap inside a pass look like one across its end, and
    the first reading too short), then within half a call of the best in twentieths of a
    call; ``first`` when no gap crosses a pass's end (nothing to choose by)."""
    if cost <= 0:
        return first
    top = first + EXTRA_CALLS * cost
    coarse = [first % cost + m * cost for m in range(int(top // cost) + 1)]
    best = _best(listed, ready, done, trial, cost, [c for c in coarse if c > 1e-3])
    if best is None:
        return first
    fine = best + cost * np.linspace(-0.5, 0.5, 21)
    return _best(listed, ready, done, trial, cost, [float(c) for c in fine if c > 1e-3]) or best


def _best(
    listed: F64, ready: F64, done: F64, trial: NDArray[np.int64], cost: float, cands: list[float]
) -> float | None:
    """The candidate pause whose replays land nearest (median, then mean error); None when
    no gap crosses a pass's end."""
    if not cands:
        return None
    errors: list[list[float]] = [[] for _ in cands]
    for t in np.unique(trial):
        sel = trial == t
        for k, c in enumerate(cands):
            errors[k] += _trial_errors(listed[sel], ready[sel], done[sel], cost, c)
    if not errors[0]:
        return None
    score = [(float(np.median(np.abs(e))), float(np.mean(np.abs(e)))) for e in errors]
    return cands[min(range(len(cands)), key=lambda k: score[k])]


def _trial_errors(listed: F64, ready: F64, done: F64, cost: float, pause: float) -> list[float]:
    """Replayed minus measured time of each sampled T7 stamp that follows a pass's end."""
    order = np.argsort(listed, kind="stable")  # the CE's list: oldest T3 first
    listed, ready, done = listed[order], ready[order], done[order]
    by_done = np.argsort(done, kind="stable")
    if by_done.size < 2:
        return []
    anchors = by_done[:-1]
    if anchors.size > MAX_GAPS:
        anchors = anchors[np.linspace(0, anchors.size - 1, MAX_GAPS).astype(np.int64)]
    out: list[float] = []
    for a in anchors:
        ta = float(done[a])
        nxt = done[done > ta + 1e-9]
        if nxt.size == 0:
            continue
        tb = float(nxt.min())
        got = _replay(listed, ready, done, int(a), ta, cost, pause, tb)
        if got is not None:
            out.append(got - tb)
    return out


def _replay(
    listed: F64, ready: F64, done: F64, a: int, ta: float, cost: float, pause: float, tb: float
) -> float | None:
    """The next T7 after job ``a``'s (at ``ta``) as the poller would stamp it, or None when
    the next one comes in ``a``'s own pass (the pause plays no part, whatever it is); a
    replay that finds nothing by well after ``tb`` gives where it gave up (a late one)."""
    idx = np.arange(listed.size)
    start = ta - cost
    for _ in range(3):  # the pass's start: a's call and each earlier call in it
        before = (idx < a) & (listed < start) & (done >= start - 1e-9)
        start = ta - cost * (1 + int(before.sum()))
    rest = (idx > a) & (listed < start) & (done > ta + 1e-9)
    calls = ta + cost * np.arange(1, int(rest.sum()) + 1)
    if (ready[rest] <= calls + 1e-9).any():
        return None  # found within a's pass
    end = ta + cost * calls.size
    for _ in range(MAX_PASSES):
        begin = end + pause
        if begin > tb + 10 * (pause + cost):
            return begin
        snap = (listed < begin) & (done > ta + 1e-9)
        calls = begin + cost * np.arange(1, int(snap.sum()) + 1)
        hit = np.flatnonzero(ready[snap] <= calls + 1e-9)
        if hit.size:
            return float(calls[hit[0]])
        end = begin + cost * calls.size
    return end
