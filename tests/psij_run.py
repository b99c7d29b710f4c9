"""Helpers for the psij backend tests: the stage chain, a backend made as a spec would."""

from __future__ import annotations

from gridbench.jobflow.backends.psij.backend import PsijBackend
from gridbench.jobflow.backends.registry import create_backend

CHAIN = ["submit", "psij_queued", "psij_active", "psij_end", "client_done"]


def psij_backend(**options: object) -> PsijBackend:
    """A psij backend made through the registry, as a spec would."""
    b = create_backend("psij", dict(options))
    assert isinstance(b, PsijBackend)
    return b
