"""Independent per-stage work of one trial's analysis on the machine's two cores.

The heavy steps (sorting passages, the partitions behind medians and percentiles, the
searches behind queue lengths) are numpy calls that release the GIL, so two threads each
take a share. Each task is a pure function of its item; results come back in item order,
so the values are the ones a plain loop gives.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: threads per map: two (the target machine's cores), one on a single-core machine
WORKERS = max(1, min(2, os.cpu_count() or 1))


def pmap(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(x) for x in items]``, spread over :data:`WORKERS` threads."""
    xs = list(items)
    if WORKERS < 2 or len(xs) < 2:
        return [fn(x) for x in xs]
    with ThreadPoolExecutor(WORKERS, thread_name_prefix="gb-analysis") as pool:
        return list(pool.map(fn, xs))


_DONE = object()


def made_ahead(items: Iterable[T]) -> Generator[T, None, None]:
    """``items``, the next one made on a thread while the caller works on this one. A
    log's reading (Arrow's validation, the conversion) and a chunk's polars and numpy
    work mostly release the GIL, so stages chained so (``made_ahead(f(x) for x in
    made_ahead(chunks))``) overlap. Each stage holds one item ahead.

    Close it (``contextlib.closing``) rather than leave it to the garbage collector: its
    end waits for the thread's step in hand, then closes ``items`` when it is a
    generator, so a chain ends in the thread that ends it. A failed step's exception
    refers back to this frame, so left alone the chain would end in whichever thread a
    collection ran, waiting on threads there (measured: a deadlock with a thread being
    started)."""
    it = iter(items)
    pool = ThreadPoolExecutor(1, thread_name_prefix="gridbench-ahead")
    try:
        ahead = pool.submit(next, it, _DONE)
        while (item := ahead.result()) is not _DONE:
            ahead = pool.submit(next, it, _DONE)
            yield item  # type: ignore[misc]
    finally:
        pool.shutdown(wait=True)  # the step in hand ends: nothing runs ``it`` any more
        if isinstance(it, Generator):
            it.close()
