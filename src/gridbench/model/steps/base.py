"""The registry of model step kinds: a kind's name (a chain step's ``kind:``) -> what
the model file allows for it and how the engine runs it.

A kind is one module that registers itself (``register_step_kind``): the built-ins
(``delay``, ``tier``, ``side``, ``poll``: ``steps/__init__.py`` imports them) and any
other (docs/architecture.md, "Adding a model step"). The model's validation
(``gridbench.model.spec``), the engine (``gridbench.model.engine``), the predicted run's
chain and ``model fit``'s summary ask the kind; nothing else lists the kinds.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

# The engine (``ChainSim``) and the model's ``Step`` both import this registry, so the base
# classes name them ``Any`` rather than import them back: each kind's module annotates its
# overrides with the real types (``steps/tier.py``), and no import cycle runs through here.
ChainSim = Any
Step = Any


class StepRun:
    """One step of one simulated trial: takes a job (``enter``) and, when the step is
    over, hands it on with ``sim.done(job, k)`` (which stamps the step's stage now)."""

    def __init__(self, sim: ChainSim, k: int) -> None:
        self.sim, self.k = sim, k

    def enter(self, job: list[float]) -> None:
        raise NotImplementedError

    def enter_after(self, job: list[float], ahead: float) -> None:
        """The job arrives ``ahead`` seconds from now (arrivals are drawn in batches)."""
        if ahead > 0:
            self.sim.env.timeout(ahead, job).callbacks.append(lambda ev: self.enter(ev.value))
        else:
            self.enter(job)

    def start(self) -> None:
        """At the trial's start (a process of the step's own: a poller, a scheduler)."""


class StepKind:
    """What a step kind declares; subclass it, set ``name`` and what differs, register an
    instance."""

    name: ClassVar[str]
    #: False: a stamp taken on the way (``service`` after the stage before it) that does
    #: not hold the job, which goes straight on (``side``); it is not in the run's chain
    holds_job: ClassVar[bool] = True
    #: the step needs ``service:`` (its duration)
    needs_service: ClassVar[bool] = True
    #: ``concurrency``, ``queue_limit`` and ``dispatch`` apply (``tier``)
    servers: ClassVar[bool] = False
    #: at most one step of this kind in a chain (``poll``)
    once: ClassVar[bool] = False

    def check(self, step: Step) -> None:
        """More checks of one step (raise ValueError with the step's stage)."""

    def check_in_chain(self, chain: Sequence[Step], i: int, seen: set[str]) -> None:
        """Checks of step ``i`` against the chain (``seen``: the stages up to it)."""

    def describe(self, step: Step) -> str | None:
        """A line for ``gridbench model fit``'s summary (None: nothing to say)."""
        return None

    def runner(self, sim: ChainSim, k: int) -> StepRun | None:
        """The step's run in a trial (None for a kind that does not hold the job)."""
        raise NotImplementedError(f"step kind {self.name!r} has no runner")


_KINDS: dict[str, StepKind] = {}
_BUILTINS = "gridbench.model.steps"


def _load_builtins() -> tuple[str, ...]:
    """The built-ins' names in their order (importing them registers them)."""
    order: tuple[str, ...] = getattr(importlib.import_module(_BUILTINS), "ORDER", ())
    return order


def register_step_kind(kind: StepKind) -> StepKind:
    """Add ``kind`` (once; the same kind registered again is a no-op); returns it, so a
    module may write ``KIND = register_step_kind(MyStep())``."""
    _load_builtins()
    known = _KINDS.get(kind.name)
    if known is not None and type(known) is not type(kind):
        raise ValueError(f"model step kind {kind.name!r} is registered already")
    _KINDS[kind.name] = kind
    return kind


def step_kinds() -> dict[str, StepKind]:
    """Every registered kind by name, the built-ins first."""
    first = _load_builtins()
    return {n: _KINDS[n] for n in first} | {n: k for n, k in _KINDS.items() if n not in first}


def step_kind(name: str) -> StepKind:
    """The kind ``name`` (a KeyError when none is registered: a validated model's are)."""
    return step_kinds()[name]


class Gate(Protocol):
    """What refuses a submission: a bounded tier, full while it holds its limit."""

    def full(self) -> bool: ...
