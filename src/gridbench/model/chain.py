"""Every model as a generic chain of steps: a ``chain:`` model as written, the reference
grid's (EDGI's) named form as its one instance (client hop, ack, CE, transfer, bridge,
workers, the CE's status updates, the client seeing the end)."""

from __future__ import annotations

from gridbench.model.spec import ChainModel, Duration, Link, Step, Tier

#: a step's stage the runs do not record (a tier's end that only a transfer follows)
HIDDEN = "_"
_NOW = Duration(mean=0.0)

#: a tier of the EDGI form as a step
_EDGI_SOURCES = {"ce_submit": "ce", "bridge_submit": "bridge", "bridge_done": "bridge"}


def _tier(stage: str, t: Tier, hidden: bool = False) -> Step:
    return Step(
        stage=HIDDEN + stage if hidden else stage,
        kind="tier",
        source=_EDGI_SOURCES[stage.lstrip(HIDDEN)],
        precision_ns=1_000_000,
        service=t.service,
        concurrency=t.concurrency,
        concurrency_source=t.concurrency_source,
        queue_limit=t.queue_limit,
        queue_limit_source=t.queue_limit_source,
    )


def steps(model: ChainModel) -> tuple[Step, ...]:
    """The model's steps in the order a job meets them."""
    if model.chain is not None:
        return tuple(model.chain)
    c, t, su = model.client, model.tiers, model.status_update
    assert c is not None and t is not None and su is not None  # the model's validator
    ms = 1_000_000
    sin, sout = t.stage_in, t.stage_out
    workers = Step(
        stage=HIDDEN + "bridge_done" if sout else "bridge_done", kind="tier", source="bridge",
        precision_ns=ms, service=t.workers.runtime, concurrency=t.workers.slots, job=True,
    )  # fmt: skip
    return (
        Step(stage="ce_entry", source="ce", precision_ns=ms, service=c.to_ce),
        Step(stage="submit_ack", kind="side", source="client", service=c.ack),
        _tier("ce_submit", t.ce, hidden=sin is not None),
        *(_staging(sin, "in", "ce_submit") if sin else ()),
        Step(stage="bridge_entry", source="bridge", precision_ns=ms, service=t.transfer.delay),
        _tier("bridge_submit", t.bridge),
        workers,
        *(_staging(sout, "out", "bridge_done") if sout else ()),
        Step(stage="ce_done", kind="poll", source="ce", precision_ns=ms, poll=su,
             tracked_from="ce_submit"),
        Step(stage="client_done", source="client", polled=True, service=c.observe),
    )  # fmt: skip


def _staging(link: Link, direction: str, then: str) -> tuple[Step, Step]:
    """A transfer (streams FIFO, stamped when it gets one and when it ends) and the
    chain's next stage, reached at its end."""
    tier = "ce" if direction == "in" else "bridge"
    start, end = ("stage_in_start", "staged_in") if direction == "in" else (
        "stage_out_start", "staged_out")  # fmt: skip
    return (
        Step(stage=end, kind="tier", source=tier, start_stage=start, service=link.overhead,
             concurrency=link.streams, link=link, direction=direction),  # type: ignore[arg-type]
        Step(stage=then, source=tier, precision_ns=1_000_000, service=_NOW),
    )  # fmt: skip


def stage_names(chain: tuple[Step, ...]) -> tuple[str, ...]:
    """The stages a simulated job is stamped with, in chain order (``submit`` first)."""
    out = ["submit"]
    for st in chain:
        if st.start_stage is not None:
            out.append(st.start_stage)
        out.append(st.stage)
    return tuple(out)
