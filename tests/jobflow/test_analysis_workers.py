"""Stages chained on threads (analysis/workers.made_ahead) end where they are ended: the
items' own generators are closed by the thread that closes the chain, at once, even when
a step failed, and never left to a garbage collection in some other thread."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

import polars as pl

import test_analysis_fixtures as fx
from gridbench.jobflow.analysis.clocks import to_controller_time
from gridbench.jobflow.analysis.reduce import frame_chunks, keep_expr, reduce_events
from gridbench.jobflow.analysis.timelines import timeline_stages
from gridbench.jobflow.analysis.workers import made_ahead


def _source(n: int, ended: list[str]) -> Iterator[int]:
    try:
        yield from range(n)
    finally:
        ended.append(threading.current_thread().name)


def _failing(items: Iterator[int], at: int) -> Iterator[int]:
    for x in items:
        if x == at:
            raise ValueError(f"step {x} failed")
        yield x * 10


def test_items_come_in_order_and_the_source_ends() -> None:
    ended: list[str] = []
    with contextlib.closing(made_ahead(_failing(made_ahead(_source(50, ended)), -1))) as c:
        assert list(c) == [10 * x for x in range(50)]
    assert len(ended) == 1


def test_closing_early_ends_the_chain_in_the_closing_thread() -> None:
    ended: list[str] = []
    chain = made_ahead(_failing(made_ahead(_source(1_000, ended)), -1))
    assert next(chain) == 0
    chain.close()
    assert ended == [threading.current_thread().name]


def test_a_reduction_that_gives_way_ends_its_threads_at_once() -> None:
    """An odd id fails the numbered path on a worker thread at the first chunk; the
    reduction reads the log again on the hash path. The first reading is ended there
    and then, in this thread, with no garbage collection (which could run it in another
    thread: a deadlock)."""
    ev = _events()
    ended: list[str] = []

    def chunks(job_prefix: str | None) -> Iterator[pl.DataFrame]:
        try:
            yield from frame_chunks(ev, 40, job_prefix)
        finally:
            ended.append(threading.current_thread().name)

    keep = keep_expr(["submit", "done"], {}, all_events=False, by_agent=False)
    gc.disable()  # the reduction must not wait for one
    try:
        got = reduce_events(chunks, STAGES, keep, job_prefix="p00-t00-")
        assert got.job_key == "hash"
        # the first reading was left part-way, so closed here; the second ran to its end
        assert len(ended) == 2 and ended[0] == threading.current_thread().name
        assert not [t for t in threading.enumerate() if t.name.startswith("gridbench-ahead")]
    finally:
        gc.enable()


STAGES = timeline_stages(["submit", "done"])


def _events() -> pl.DataFrame:
    """A job the numbered path refuses, then 400 numbered ones (20 more chunks)."""
    rows = [{"job": "hand-made", "stage": "submit", "t": 0.0}]
    rows += [
        {"job": f"p00-t00-{i:06d}", "stage": s, "t": float(i)}
        for i in range(400)
        for s in ("submit", "done")
    ]
    return to_controller_time(fx.frame(rows), {})
