"""The reference grid's data staging as seen by its backend: the sizes a submission
carries, the staging stamps read from ``GET /stamps``, and the chain with the two timed
transfers in place (stage-in inside the CE's preparation, stage-out before the bridge's
T6), so the EDGI analysis can name a slow link as the first breaking stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import Staging
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.model import Event, Precision

# The grid's stage names (gridbench.jobflow.reference.staging, checked equal by the tests),
# not imported: importing that package loads the grid's server (FastAPI, uvicorn).
STAGE_IN: Final = ("stage_in_start", "staged_in")
STAGE_OUT: Final = ("stage_out_start", "staged_out")

#: each transfer: its tier, its stamps, the chain stage it goes before, its labels
_TRANSFERS = (
    ("ce", STAGE_IN, "ce_submit", ("CE input upload started", "CE input uploaded")),
    ("bridge", STAGE_OUT, "bridge_done", ("bridge output download started", "output downloaded")),
)
_TIER = {stage: tier for tier, pair, _b, _l in _TRANSFERS for stage in pair}


def staging_body(st: Staging | None) -> dict[str, int]:
    """The ``POST /jobs`` fields for what a job stages (none when it stages nothing)."""
    if st is None:
        return {}
    fields = {
        "input_bytes": st.input_bytes,
        "input_files": st.input_files,
        "output_bytes": st.output_bytes,
        "output_files": st.output_files,
    }
    return {k: v for k, v in fields.items() if v is not None}


def staging_configured(config: Mapping[str, Any]) -> bool:
    """Whether a grid's ``/config`` answer has a staging link on."""
    links = (config.get("ce", {}).get("stage_in"), config.get("bridge", {}).get("stage_out"))
    return any(isinstance(link, Mapping) and link.get("bandwidth_bps") for link in links)


def with_staging(chain: StageChain) -> StageChain:
    """``chain`` with each transfer's two stamps before the stage it precedes, and a
    non-component segment per transfer (the components already contain it: stage-in is
    part of ce_prep, stage-out of dg)."""
    stages = list(chain.stages)
    segments = list(chain.segments)
    for tier, (start, end), before, (l0, l1) in _TRANSFERS:
        i = next(n for n, s in enumerate(stages) if s.name == before)
        stages[i:i] = [Stage(start, tier, l0, Precision.US), Stage(end, tier, l1, Precision.US)]
        segments.append(Segment(start.removesuffix("_start"), start, end, False))
    return StageChain(tuple(stages), tuple(segments))


def stamp_events(answer: Any) -> tuple[list[Event], int]:
    """The events of one ``GET /stamps`` answer and the next cursor."""
    try:
        rows = answer["stamps"]
        nxt = int(answer["next"])
        events = [
            Event(
                str(r["id"]),
                str(r["stage"]),
                int(r["t_ns"]),
                source=_TIER.get(str(r["stage"]), "ce"),
                precision_ns=Precision.US,
                attrs=dict(r.get("attrs") or {}),
            )
            for r in rows
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(
            f"staging stamps are not the expected JSON ({exc})",
            where="GET /stamps",
            fix="is this URL a gridbench reference grid of this version?",
        ) from None
    return events, nxt
