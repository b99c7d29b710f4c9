"""The event model shared by the runner, ingesters and analysis.

An event is one stamped fact about one job: ``(job, stage, t_ns, source, precision_ns,
agent, clock_offset_ns, attrs)``. Times are integer nanoseconds since the Unix epoch, on
the clock of ``source``. ``clock_offset_ns`` is the estimated offset of the stamping
agent's clock: agent clock − controller clock, so ``t_ns − clock_offset_ns`` is the
controller's time (gridbench.jobflow.run.clock_sync; analysis applies it when it loads events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import polars as pl


class Source:
    """Well-known event sources (any component name is allowed)."""

    CLIENT: Final = "client"
    CE: Final = "ce"
    BRIDGE: Final = "bridge"
    WORKER: Final = "worker"


class Precision:
    """Common stamp precisions, in nanoseconds."""

    NS: Final = 1
    US: Final = 1_000
    MS: Final = 1_000_000
    S: Final = 1_000_000_000


# Client-side stages every load model records; backends add their own chain.
STAGE_INTENDED: Final = "intended"  # when the schedule wanted the submission to start
STAGE_SUBMIT: Final = "submit"  # when the submit call actually started (T1)
STAGE_SUBMIT_ACK: Final = "submit_ack"  # when the submit call returned an id
STAGE_CLIENT_DONE: Final = "client_done"  # when the client first saw a terminal state (T8)
STAGE_FAILED: Final = "failed"  # a failure; attrs["kind"] says which
STAGE_CANCELLED: Final = "cancelled"  # gridbench cancelled it (abort/cleanup)

# Failure kinds (attrs["kind"] of a STAGE_FAILED event).
FAIL_DROPPED: Final = "dropped"  # never submitted: the submitter could not keep the schedule
FAIL_SUBMIT_REJECTED: Final = "submit_rejected"
FAIL_SUBMIT_TIMEOUT: Final = "submit_timeout"
FAIL_SUBMIT_ERROR: Final = "submit_error"
FAIL_SUBMIT_AUTH: Final = "submit_auth"  # the credential was refused or has expired
FAIL_JOB: Final = "job_failed"  # the backend reported the job as failed
FAIL_LOST: Final = "lost"  # never reached a terminal state before the drain time-out
#: the kinds that fail a job at submission (it never reached the system under test)
SUBMIT_FAILURES: Final = (
    FAIL_DROPPED,
    FAIL_SUBMIT_REJECTED,
    FAIL_SUBMIT_TIMEOUT,
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_AUTH,
)

EVENT_COLUMNS: Final = (
    "job",
    "stage",
    "t_ns",
    "source",
    "precision_ns",
    "agent",
    "clock_offset_ns",
    "attrs",
)

if TYPE_CHECKING:
    #: the event log's columns and their polars types (made on first use: a job-flow spec
    #: is loaded, and ``gridbench validate`` answers, without importing polars)
    EVENT_SCHEMA: pl.Schema


def _event_schema() -> pl.Schema:
    import polars as pl

    return pl.Schema(
        {
            "job": pl.String,
            "stage": pl.String,
            "t_ns": pl.Int64,
            "source": pl.String,
            "precision_ns": pl.Int64,
            "agent": pl.String,
            "clock_offset_ns": pl.Int64,
            "attrs": pl.String,  # JSON object, or empty
        }
    )


def __getattr__(name: str) -> Any:
    """``EVENT_SCHEMA``, made (with polars) when first asked for."""
    if name == "EVENT_SCHEMA":
        schema = globals()["EVENT_SCHEMA"] = _event_schema()
        return schema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class Event:
    """One stamped fact about one job."""

    job: str
    stage: str
    t_ns: int
    source: str = Source.CLIENT
    precision_ns: int = Precision.US
    agent: str = "local"
    clock_offset_ns: int = 0
    attrs: dict[str, Any] = field(default_factory=dict)
