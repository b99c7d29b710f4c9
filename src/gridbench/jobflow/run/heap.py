"""The garbage collector kept off the process's long-lived objects while a trial runs, and
off an open loop's rows while they wait for their flush."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: the garbage collector's first threshold while an open loop runs: net new containers
#: (rows waiting for a flush, mostly) before a collection, well above a flush interval's
GC_THRESHOLD = 50_000
_raised = [0, 0]  # open loops running with the threshold raised; the threshold before


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the collector's first threshold to :data:`GC_THRESHOLD` while in the block
    (and any other open loop's, in this process), then put back the one before."""
    if not _raised[0]:
        _raised[1] = gc.get_threshold()[0]
        first, second, third = gc.get_threshold()
        gc.set_threshold(max(first, GC_THRESHOLD), second, third)
    _raised[0] += 1
    try:
        yield
    finally:
        _raised[0] -= 1
        if not _raised[0]:
            _, second, third = gc.get_threshold()
            gc.set_threshold(_raised[1], second, third)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Freeze every object there is (modules, the spec, the backend) until the end: the
    collector's full passes during the trial then traverse only the trial's own objects.
    Unfrozen, one such pass over a loaded controller took ~100 ms, a gap in the schedule
    (the open loop's max lag) and ~2 us a submission at 20,000/s (bench/bench_open_loop.py).
    Nothing leaks: what was frozen goes back to the collector's oldest generation at the
    end (no collection first either: that alone would cost the ~100 ms)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
