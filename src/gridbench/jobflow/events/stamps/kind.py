"""The registry of stamp-source kinds: a kind's name (the ``kind:`` of a source in a
``stamps:`` block) -> its spec model and its reader.

A kind is one module that registers itself (``register_stamp_kind``): the built-ins
(``kinds/sqlite.py``, ``kinds/log.py``, ``kinds/files.py``, imported in that order by
``kinds/__init__.py``) and any other (docs/architecture.md, "Adding a stamp kind"). The
``sources:`` union of a plan, its validation and the reader of each source all come from
here; nothing else lists the kinds.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gridbench.jobflow.events.stamps.declare import SourceBase
from gridbench.jobflow.events.stamps.readers import ReadResult


class Reader(Protocol):
    """Reads what is new in one source since its previous call (blocking I/O)."""

    def read(self) -> ReadResult: ...


@dataclass(frozen=True, slots=True)
class StampKind:
    """One kind of stamp source: ``spec`` (a :class:`SourceBase` whose ``kind`` is
    ``Literal[name]``) and ``reader(source, location)``, the reader of one declared source
    (``location`` is the source's ``location`` with the variables filled in)."""

    name: str
    spec: type[SourceBase]
    reader: Callable[[Any, str], Reader]


_KINDS: dict[str, StampKind] = {}
_BUILTINS = "gridbench.jobflow.events.stamps.kinds"


def _load_builtins() -> tuple[str, ...]:
    """The built-ins' names in their order (importing them registers them; a module
    already being imported, a built-in registering itself, is not imported again)."""
    order: tuple[str, ...] = getattr(importlib.import_module(_BUILTINS), "ORDER", ())
    return order


def register_stamp_kind(kind: StampKind) -> StampKind:
    """Add ``kind`` to the registry (once; the same kind registered again is a no-op);
    returns it, so a module may write ``KIND = register_stamp_kind(StampKind(...))``."""
    _load_builtins()
    known = _KINDS.get(kind.name)
    if known is not None and known != kind:
        raise ValueError(f"stamp kind {kind.name!r} is registered already")
    fields = kind.spec.model_fields
    if "kind" not in fields or getattr(fields["kind"].annotation, "__args__", ()) != (kind.name,):
        raise ValueError(f"stamp kind {kind.name!r}: its spec needs kind: Literal[{kind.name!r}]")
    _KINDS[kind.name] = kind
    return kind


def stamp_kinds() -> dict[str, StampKind]:
    """Every registered kind by name, the built-ins first."""
    first = _load_builtins()
    return {n: _KINDS[n] for n in first} | {n: k for n, k in _KINDS.items() if n not in first}


def stamp_kind(name: str) -> StampKind:
    """The kind ``name`` (a KeyError when none is registered: a validated plan's kinds are)."""
    return stamp_kinds()[name]
