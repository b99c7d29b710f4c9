"""The dashboard's MeasuringBackend has exactly the optional hooks of the backend it wraps.

Python 3.12+ runtime-checkable protocols ignore ``__getattr__``: the wrapper must define
each hook itself, and only the hooks the inner backend has.
"""

from __future__ import annotations

import asyncio

import pytest

from gridbench.jobflow.backends.base import (
    Backend,
    BulkSubmitter,
    OrphanStopper,
    ReportPublisher,
    RuntimeInfoSource,
    RuntimeStatsSource,
)
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.web.live import HOOKS, MeasuringBackend, measuring

PROTOCOLS = (BulkSubmitter, RuntimeStatsSource, RuntimeInfoSource, OrphanStopper, ReportPublisher)


def test_every_hook_protocol_has_a_forwarder() -> None:
    assert tuple(p for p, _ in HOOKS) == PROTOCOLS


def test_the_wrapper_does_not_forward_by_getattr() -> None:
    assert "__getattr__" not in vars(MeasuringBackend)


@pytest.mark.parametrize("kind", ["noop", "local"])
@pytest.mark.parametrize("proto", PROTOCOLS, ids=lambda p: p.__name__)
def test_wrapper_has_exactly_the_inner_hooks(kind: str, proto: type) -> None:
    inner = create_backend(kind)
    wrapper = measuring(inner)
    assert isinstance(wrapper, Backend)
    assert isinstance(wrapper, proto) == isinstance(inner, proto)


def test_the_backends_differ_in_their_hooks() -> None:
    """The two backends tested above do not have the same hooks (else the test proves less)."""
    noop, local = create_backend("noop"), create_backend("local")
    assert [isinstance(noop, p) for p in PROTOCOLS] != [isinstance(local, p) for p in PROTOCOLS]


def test_hooks_forward_to_the_inner_backend() -> None:
    inner = create_backend("local")
    wrapper = measuring(inner)
    assert wrapper.name == inner.name
    assert wrapper.stage_chain() == inner.stage_chain()
    if isinstance(inner, RuntimeStatsSource):
        assert isinstance(wrapper, RuntimeStatsSource)
        assert wrapper.runtime_stats().keys() == inner.runtime_stats().keys()
    if isinstance(inner, OrphanStopper):
        assert isinstance(wrapper, OrphanStopper)
        assert wrapper.stop_orphans([]) == []
    assert asyncio.run(wrapper.server_events()) == []
