"""The split load model: one workload run as one job and as N parallel parts through the
backend (the seeds' speedup and overhead against a serial run, 002 §6.1-6.2, 000 §4.6.2,
§4.6.4, §4.8.3), with the result checked.

Each trial submits the serial job (``{part}`` 0 of ``{parts}`` 1 in the job's command;
``job.runtime`` for a simulating backend) and waits for it to end; then the N parts at
the same instant (``{part}`` 0..N-1 of ``{parts}`` N; ``job.runtime / N`` each) and waits
for them all (each wait at most ``timeouts.drain``). With ``combine`` (``sum``: each
output is a number, the parts' add up to the serial one; ``concat``: the parts' outputs in
order are the serial output) the outputs are fetched and the serial result's sha256 is
compared with the parts' combined result; the check is stamped into the trial's events as
an ``op_end`` of op ``split_check`` (``equal``, both digests, or why it could not be
made). The figures come from the events alone (:mod:`gridbench.jobflow.loads.split_metrics`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gridbench.jobflow.backends.base import JobRequest, JobState
from gridbench.jobflow.loads.base import BaseLoadModel, LoadBase, PlanEstimate, TrialContext, narrow
from gridbench.jobflow.loads.retry import EndWaiter
from gridbench.jobflow.loads.split_metrics import split_metrics, split_summary
from gridbench.jobflow.run.closed_loop import STAGE_OP_END

if TYPE_CHECKING:
    import polars as pl

    from gridbench.jobflow.events.chain import StageChain
    from gridbench.jobflow.specbase.model import ExperimentBase

CHECK = "split_check"


class SplitLoad(LoadBase):
    """``load:`` of the split model."""

    model: Literal["split"]
    parts: int = Field(default=4, ge=2, le=10_000, description="N parallel parts (split)")
    combine: Literal["sum", "concat", "none"] = Field(
        default="sum",
        description="how the parts' outputs make the serial one: sum (numbers), concat "
        "(in order), none (no check) (split)",
    )


def _filled(req: JobRequest, part: int, parts: int, runtime: float | None) -> JobRequest:
    """The request with ``{part}`` and ``{parts}`` filled in its command."""
    cmd = tuple(a.replace("{part}", str(part)).replace("{parts}", str(parts)) for a in req.command)
    attrs = {**req.attributes, "split": "serial" if parts == 1 else "part", "part": part}
    return dataclasses.replace(
        req,
        command=cmd,
        attributes=attrs,
        runtime_s=None if runtime is None else runtime / parts,
    )


def combined(outputs: Sequence[bytes], how: str) -> bytes:
    """The parts' outputs as one result (``sum``: their numbers added, as text)."""
    if how == "concat":
        return b"".join(outputs)
    total = Decimal(0)
    for out in outputs:
        total += _number(out)
    return f"{total.normalize():f}".encode()


def _number(out: bytes) -> Decimal:
    try:
        return Decimal(out.decode("utf-8", "replace").strip().splitlines()[-1].strip())
    except (InvalidOperation, IndexError):
        raise ValueError(f"output is not a number: {out[:60]!r}") from None


def _result(out: bytes, how: str) -> bytes:
    return combined([out], how) if how == "sum" else out


async def _wait(ctx: TrialContext, waiter: EndWaiter, names: list[str]) -> list[str]:
    """Wait for ``names`` to end; the ones not ended in time are cancelled (failed)."""
    await waiter.wait(names, ctx.spec.timeouts.drain, ctx.stop)
    left = [n for n in names if n not in waiter.ended]
    ids = [bid for bid, job in ctx.tracker.inflight.items() if job in left]
    if ids and not ctx.stop.is_set():
        await ctx.backend.cancel(ids)
    return left


async def run_split(ctx: TrialContext) -> None:
    """The serial job, then the N parts at once, then the check of their results."""
    load = narrow(ctx.spec.load, SplitLoad)
    make = ctx.requests(load.parts + 1)
    runtime = ctx.spec.job.runtime
    rec = ctx.recorders[0]
    waiter = EndWaiter(ctx.tracker)
    record: dict[str, Any] = {"parts": load.parts, "combine": load.combine}
    ctx.info["split"] = record
    try:
        serial = _filled(make(0), 0, 1, runtime)
        sid = await ctx.submit(serial, rec)
        if sid is None or ctx.stop.is_set():
            return
        await _wait(ctx, waiter, [serial.name])
        parts = [_filled(make(i + 1), i, load.parts, runtime) for i in range(load.parts)]
        ids = await asyncio.gather(*(ctx.submit(r, rec) for r in parts))
        acked = [r.name for r, bid in zip(parts, ids, strict=True) if bid]
        await _wait(ctx, waiter, acked)
        ctx.info["planned_jobs"] = ctx.progress.planned = load.parts + 1
        if load.combine != "none" and not ctx.stop.is_set():
            done = all(waiter.ended.get(n) is JobState.DONE for n in [serial.name, *acked])
            whole = len(acked) == load.parts and done
            attrs = await _check(ctx, load.combine, sid, list(ids), whole)
            rec.stamp(CHECK, STAGE_OP_END, None, {"op": CHECK, **attrs})
        ctx.write_info()
    finally:
        waiter.close()


async def _check(
    ctx: TrialContext, how: str, serial: str, parts: list[str | None], whole: bool
) -> dict[str, Any]:
    """The check's attributes: equal and both digests, or why it could not be made."""
    if not whole:
        return {"equal": None, "why": "not every job ended done: nothing to compare"}
    if not ctx.backend.capabilities().fetch_output:
        return {"equal": None, "why": f"the {ctx.spec.backend.type} backend keeps no output"}
    try:
        want = _result(await ctx.backend.fetch_output(serial), how)
        outs = [await ctx.backend.fetch_output(p) for p in parts if p is not None]
        got = combined(outs, how)
    except Exception as exc:  # an output that cannot be read or parsed: said, not a crash
        return {"equal": None, "why": f"outputs not comparable: {exc}"[:300]}
    a, b = hashlib.sha256(want).hexdigest(), hashlib.sha256(got).hexdigest()
    return {"equal": a == b, "serial_sha256": a, "parts_sha256": b}


class Split(BaseLoadModel):
    """The split model (see the module docstring)."""

    name = "split"
    spec = SplitLoad
    growth = ("model.speedup", "speedup against the serial run", "x")
    section_refs = ("gridbench.jobflow.report.split:split_table",)
    run = staticmethod(run_split)
    summary = staticmethod(split_summary)
    reads_events = True

    def plan(self, spec: ExperimentBase, drain_s: float) -> PlanEstimate:
        """The serial job and the N parts; the serial run, then a part's, plus the drain."""
        load = narrow(spec.load, SplitLoad)
        run = spec.job.runtime or 0.0
        return PlanEstimate(load.parts + 1, run + run / load.parts + drain_s, None)

    def trial_metrics(self, events: pl.DataFrame, chain: StageChain) -> dict[str, Any] | None:
        """See :func:`split_metrics`."""
        return split_metrics(events)


MODEL = Split()
