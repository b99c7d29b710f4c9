"""Every model as a generic chain of steps: a ``chain:`` model as written, the reference
grid's (EDGI's) named form as its one instance (client hop, ack, CE, transfer, bridge,
workers, the CE's status updates, the client seeing the end)."""

from __future__ import annotations

from gridbench.model.spec import ChainModel, Step, Tier

#: a tier of the EDGI form as a step
_EDGI_SOURCES = {"ce_submit": "ce", "bridge_submit": "bridge", "bridge_done": "bridge"}


def _tier(stage: str, t: Tier) -> Step:
    return Step(
        stage=stage,
        kind="tier",
        source=_EDGI_SOURCES[stage],
        precision_ns=1_000_000,
        service=t.service,
        concurrency=t.concurrency,
        concurrency_source=t.concurrency_source,
        queue_limit=t.queue_limit,
    )


def steps(model: ChainModel) -> tuple[Step, ...]:
    """The model's steps in the order a job meets them."""
    if model.chain is not None:
        return tuple(model.chain)
    c, t, su = model.client, model.tiers, model.status_update
    assert c is not None and t is not None and su is not None  # the model's validator
    ms = 1_000_000
    workers = Step(
        stage="bridge_done", kind="tier", source="bridge", precision_ns=ms,
        service=t.workers.runtime, concurrency=t.workers.slots, job=True,
    )  # fmt: skip
    return (
        Step(stage="ce_entry", source="ce", precision_ns=ms, service=c.to_ce),
        Step(stage="submit_ack", kind="side", source="client", service=c.ack),
        _tier("ce_submit", t.ce),
        Step(stage="bridge_entry", source="bridge", precision_ns=ms, service=t.transfer.delay),
        _tier("bridge_submit", t.bridge),
        workers,
        Step(stage="ce_done", kind="poll", source="ce", precision_ns=ms, poll=su,
             tracked_from="ce_submit"),
        Step(stage="client_done", source="client", polled=True, service=c.observe),
    )  # fmt: skip


def stage_names(chain: tuple[Step, ...]) -> tuple[str, ...]:
    """The stages a simulated job is stamped with, in chain order (``submit`` first)."""
    out = ["submit"]
    for st in chain:
        if st.start_stage is not None:
            out.append(st.start_stage)
        out.append(st.stage)
    return tuple(out)
