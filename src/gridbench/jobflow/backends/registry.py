"""The backend registry: every backend, built-in or plugin, is a ``gridbench.jobflow.backends``
entry point.

The built-ins are declared once, in pyproject.toml's ``[project.entry-points."gridbench.backends"]``
table (each naming its class); a plugin package declares its own the same way. A backend
class is constructed with ``cls.from_options(options: dict) -> Backend``, which validates
its own options and raises :class:`SpecError` naming the bad one.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol, cast

from gridbench.errors import SpecError
from gridbench.jobflow.backends.base import Backend, Capabilities

ENTRY_POINT_GROUP = "gridbench.backends"
# the distribution whose entry points are the built-ins: they win over a plugin's of the
# same name, so a plugin cannot silently replace ``slurm``, say
_OWN_DIST = "gridbench"


class BackendFactory(Protocol):
    name: str

    def from_options(self, options: dict[str, Any]) -> Backend: ...


def _entry_points() -> dict[str, EntryPoint]:
    """The group's entry points by name: gridbench's own, else the first plugin's."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        prev = found.get(ep.name)
        if prev is None or (_is_own(ep) and not _is_own(prev)):
            found[ep.name] = ep
    return found


def _is_own(ep: EntryPoint) -> bool:
    return ep.dist is not None and ep.dist.name == _OWN_DIST


def available() -> dict[str, str]:
    """Backend names and where they come from (module:attribute)."""
    return {name: ep.value for name, ep in _entry_points().items()}


def capabilities_of(name: str, options: dict[str, Any] | None = None) -> Capabilities:
    """What a backend, as configured, can do: for the plan, before anything starts."""
    return create_backend(name, options).capabilities()


def create_backend(name: str, options: dict[str, Any] | None = None) -> Backend:
    """Instantiate a backend by registry name, validating its options."""
    eps = _entry_points()
    if not eps:  # run from a source tree that was never installed: no metadata at all
        raise SpecError(
            f"unknown backend {name!r}: no backends are registered",
            where="backend.type",
            fix="install gridbench (pip install -e .) so that its entry points exist",
        )
    if name not in eps:
        raise SpecError(
            f"unknown backend {name!r}",
            where="backend.type",
            fix=f"use one of: {', '.join(sorted(eps))}",
        )
    try:
        factory = cast(BackendFactory, eps[name].load())
    except (ImportError, AttributeError) as exc:
        raise SpecError(
            f"backend {name!r} could not be loaded: {exc}",
            where="backend.type",
            fix="check that the plugin providing it is installed",
        ) from None
    return factory.from_options(dict(options or {}))
