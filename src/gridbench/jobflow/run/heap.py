"""The garbage collector kept off the process's long-lived objects while a trial runs."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


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
