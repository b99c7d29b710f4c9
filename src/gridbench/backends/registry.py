"""The backend registry: built-ins plus plugins from the ``gridbench.backends`` entry points.

A backend class is constructed with ``cls.from_options(options: dict) -> Backend``, which
validates its own options and raises :class:`SpecError` naming the bad one.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Protocol, cast

from gridbench.backends.base import Backend
from gridbench.errors import SpecError

ENTRY_POINT_GROUP = "gridbench.backends"

_BUILTIN = {
    "noop": "gridbench.backends.noop:NoopBackend",
    "local": "gridbench.backends.local:LocalBackend",
    "reference": "gridbench.backends.reference:ReferenceBackend",
    "command": "gridbench.backends.command:CommandBackend",
    "slurm": "gridbench.backends.slurm:SlurmBackend",
    "sge": "gridbench.backends.sge:SgeBackend",
    "psij": "gridbench.backends.psij_backend:PsijBackend",
}


class BackendFactory(Protocol):
    name: str

    def from_options(self, options: dict[str, Any]) -> Backend: ...


def available() -> dict[str, str]:
    """Backend names and where they come from (module:attribute)."""
    found = dict(_BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def _load(target: str) -> BackendFactory:
    module, _, attr = target.partition(":")
    return cast(BackendFactory, getattr(importlib.import_module(module), attr))


def create_backend(name: str, options: dict[str, Any] | None = None) -> Backend:
    """Instantiate a backend by registry name, validating its options."""
    names = available()
    if name not in names:
        raise SpecError(
            f"unknown backend {name!r}",
            where="backend.type",
            fix=f"use one of: {', '.join(sorted(names))}",
        )
    try:
        factory = _load(names[name])
    except (ImportError, AttributeError) as exc:
        raise SpecError(
            f"backend {name!r} could not be loaded: {exc}",
            where="backend.type",
            fix="check that the plugin providing it is installed",
        ) from None
    return factory.from_options(dict(options or {}))
