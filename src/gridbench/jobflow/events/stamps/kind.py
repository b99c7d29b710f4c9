"""The registry of stamp-source kinds: a kind's name (the ``kind:`` of a source in a
``stamps:`` block) -> its spec model and its reader.

A kind is one module that registers itself (``register_stamp_kind``): the built-ins
(``kinds/sqlite.py``, ``kinds/log.py``, ``kinds/files.py``, imported in that order by
``kinds/__init__.py``) and any other (docs/architecture.md, "Adding a stamp kind"). The
``sources:`` union of a plan, its validation and the reader of each source all come from
here; nothing else lists the kinds.
"""

from __future__ import annotations

import functools
import importlib
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, ValidationError, create_model

from gridbench.errors import SpecError
from gridbench.jobflow.events.stamps import library
from gridbench.jobflow.events.stamps.declare import SourceBase, StampPlan
from gridbench.jobflow.events.stamps.readers import Reader


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


def make_reader(src: SourceBase, location: str) -> Reader:
    """The reader of one source, by its kind's registration; ``location`` is its path or
    glob with the variables filled in."""
    return stamp_kind(src.kind).reader(src, location)


_PLAN_MODELS: dict[tuple[type[SourceBase], ...], type[StampPlan]] = {}


def plan_model() -> type[StampPlan]:
    """:class:`StampPlan` whose ``sources`` are the union of the registered kinds' models,
    told apart by ``kind`` (made again when a kind is registered)."""
    specs = tuple(k.spec for k in stamp_kinds().values())
    model = _PLAN_MODELS.get(specs)
    if model is None:
        union: Any = functools.reduce(operator.or_, specs)
        source = Annotated[union, Field(discriminator="kind")]
        model = create_model(
            "StampPlan",
            __base__=StampPlan,
            __module__=__name__,
            sources=(list[source], Field(min_length=1)),
        )
        _PLAN_MODELS[specs] = model
    return model


def parse_plan(data: Any, where: str) -> StampPlan:
    """Validate a ``stamps:`` block; one SpecError naming each bad field and the fix."""
    data = library.resolve(data, where)
    try:
        plan = plan_model().model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{where}.{'.'.join(str(x) for x in e['loc'])}: "
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        ]
        raise SpecError(
            "; ".join(problems[:5]),
            where=where,
            fix="see docs/backends.md, 'Server stamps', for the fields of a stamp source",
        ) from None
    tiers = [s.tier for s in plan.sources]
    for s in plan.sources:
        first = next(x for x in plan.sources if x.tier == s.tier)
        if (s.key, s.backend_pattern) != (first.key, first.backend_pattern):
            raise SpecError(
                f"the sources of tier {s.tier!r} meet the jobs in different ways",
                where=f"{where}.sources",
                fix="give every source of one tier the same key and backend_pattern",
            )
    for s in plan.sources:
        if s.via is not None and s.via not in tiers:
            raise SpecError(
                f"source of tier {s.tier!r} joins through tier {s.via!r}, which no source has",
                where=f"{where}.sources",
                fix=f"declare a source with tier: {s.via} that records local ids, or use "
                "key: backend",
            )
        if s.via is None and s.key not in ("backend", "name"):  # pragma: no cover
            raise SpecError(f"bad key {s.key!r}", where=where)
    return plan
