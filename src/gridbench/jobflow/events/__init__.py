"""Events: the stamped facts about jobs, their append-only log, clocks and ingesters."""

from typing import Any

from gridbench.jobflow.events.model import Event, Precision, Source

__all__ = ["EVENT_SCHEMA", "Event", "Precision", "Source"]


def __getattr__(name: str) -> Any:
    """``EVENT_SCHEMA`` (:mod:`gridbench.jobflow.events.model`), made with polars on first
    use."""
    if name == "EVENT_SCHEMA":
        from gridbench.jobflow.events import model

        return model.EVENT_SCHEMA
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
