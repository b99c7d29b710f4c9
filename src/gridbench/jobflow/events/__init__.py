"""Events: the stamped facts about jobs, their append-only log, clocks and ingesters."""

from gridbench.jobflow.events.model import EVENT_SCHEMA, Event, Precision, Source

__all__ = ["EVENT_SCHEMA", "Event", "Precision", "Source"]
