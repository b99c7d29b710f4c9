"""The common part of every load model's ``load:`` block: :class:`LoadBase` (with the
agents, as a count or an :class:`AgentsBlock`), and :func:`narrow` to a model's own spec.

A load model's spec subclasses :class:`LoadBase`; the spec's ``load`` is the union of the
registered models' specs (:func:`gridbench.jobflow.loads.load_spec_type`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from gridbench.errors import SpecError
from gridbench.units import Duration

#: The model of a ``load:`` block that names none (here, not in the registry, so that
#: code below the load models can read it).
DEFAULT_MODEL = "open"


class Strict(BaseModel):
    """A spec block: unknown fields are errors (typos are caught), values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentsBlock(Strict):
    """``load.agents`` as a block: agents in other processes or on other hosts, run on Dask
    (exactly one of ``processes``, ``hosts`` or ``scheduler``; see docs/spec.md)."""

    processes: int | None = Field(default=None, ge=1, le=256)
    hosts: list[str] | None = Field(default=None, min_length=1)
    venv: str | None = None  # the remote venv (hosts): its bin/python runs the agent
    scheduler: str | None = None  # tcp://host:port of a running Dask scheduler
    #: per agent (agent-0, agent-1, ...): environment variables set in its process before
    #: it builds its backend (its backend's client programs inherit them)
    env: dict[str, dict[str, str]] = Field(default_factory=dict)
    on_controller_loss: Literal["cancel", "keep"] = "cancel"
    heartbeat: Duration = Field(default=5.0, gt=0)  # no word this long: controller lost
    #: where agents on hosts/scheduler keep their logs (relative: under their home)
    workdir: str = ".gridbench/agents"
    ssh_options: dict[str, Any] = Field(default_factory=dict)  # asyncssh connect options
    #: an inventory of hosts (docs/hosts.md): ``hosts`` are then its names, and their
    #: addresses, ssh options and python come from it (``venv``, ``ssh_options`` override)
    inventory: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> AgentsBlock:
        given = [k for k in ("processes", "hosts", "scheduler") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "agents needs exactly one of processes, hosts or scheduler "
                "(e.g. agents: {processes: 2})"
            )
        if self.hosts is not None and not self.venv and not self.inventory:
            raise ValueError(
                "agents.hosts needs venv: the path of the venv holding gridbench on every "
                "host (or inventory: a hosts file whose hosts name their python)"
            )
        if self.inventory is not None and self.hosts is None:
            raise ValueError("agents.inventory names the hosts of agents.hosts: give hosts too")
        if self.scheduler is not None and not self.scheduler.startswith(("tcp://", "tls://")):
            raise ValueError("agents.scheduler is an address like tcp://host:8786")
        bad = [k for k in self.env if not re.fullmatch(r"agent-\d+", k)]
        if bad:
            raise ValueError(f"agents.env keys are agent names (agent-0, agent-1, ...), not {bad}")
        # a scheduler's workers are counted only at connect time: its names cannot be checked
        count = self.processes or len(self.hosts or ())
        absent = [k for k in self.env if count and int(k.removeprefix("agent-")) >= count]
        if absent:
            names = ", ".join(f"agent-{i}" for i in range(count))
            raise ValueError(
                f"agents.env names {', '.join(absent)}, which does not exist: the agents "
                f"are {names}"
            )
        return self

    def resolved(self) -> AgentsBlock:
        """The block with ``hosts`` as addresses: itself, or with an ``inventory`` its
        hosts' addresses, ssh options (``ssh_options`` given here win) and venv (from
        their python, ``venv`` given here wins); a SpecError for an unknown name."""
        if self.inventory is None or not self.hosts:
            return self
        from gridbench.hosts.inventory import load_inventory, shared_access

        inv = load_inventory(self.inventory)
        addresses, ssh, python = shared_access(inv, list(self.hosts), "load.agents.hosts")
        venv = self.venv
        if venv is None:
            if not python or not python.endswith("/bin/python"):
                raise SpecError(
                    f"the hosts' python in {self.inventory} is {python or 'not given'}, "
                    "not a venv's bin/python",
                    where="load.agents",
                    fix="give venv: here, or python: VENV/bin/python in the inventory",
                )
            venv = python.removesuffix("/bin/python")
        return self.model_copy(
            update={
                "hosts": addresses,
                "ssh_options": {**ssh, **self.ssh_options},
                "venv": venv,
                "inventory": None,
            }
        )

    @property
    def kind(self) -> str:
        """processes | hosts | scheduler."""
        return "processes" if self.processes else "hosts" if self.hosts else "scheduler"


def _agents_kind(value: Any) -> str:
    """A mapping is a block, anything else a count (so an error names one form, not both)."""
    return "block" if isinstance(value, dict | AgentsBlock) else "count"


AgentsField = Annotated[
    Annotated[int, Tag("count")] | Annotated[AgentsBlock, Tag("block")],
    Discriminator(_agents_kind),
]


class LoadBase(Strict):
    """The fields every load model has (METHODS 1.5-1.9); a model's spec adds its own."""

    model: str
    late_threshold: Duration = Field(default=0.1, description="later than this: counted late")
    agents: AgentsField = Field(
        default=1,
        description="submitter agents sharing the schedule: a count (coroutines in this "
        "process) or a block (processes, hosts or a Dask scheduler)",
    )
    seed: int = 1

    @model_validator(mode="after")
    def _agent_count(self) -> LoadBase:
        if isinstance(self.agents, int) and not 1 <= self.agents <= 256:
            raise ValueError("agents is a count from 1 to 256, or a block (processes: N)")
        if not isinstance(self.agents, int) and self.model != "open":
            raise ValueError(
                f"agents as a block (processes, hosts, scheduler) runs the open model only, "
                f"not {self.model}; use a count (agents: 2) here"
            )
        return self

    @property
    def agent_count(self) -> int:
        """Agents known from the spec (coroutines, processes or hosts; 1 for a scheduler,
        whose workers are only counted at connect time)."""
        a = self.agents
        if isinstance(a, int):
            return a
        return a.processes or len(a.hosts or ()) or 1

    @property
    def remote_agents(self) -> AgentsBlock | None:
        """The block when agents run outside this process (on Dask), else None."""
        return self.agents if isinstance(self.agents, AgentsBlock) else None


L = TypeVar("L", bound=LoadBase)


def narrow(load: LoadBase, cls: type[L]) -> L:
    """``load`` as its model's spec class (a model's hooks only ever get their own spec)."""
    if not isinstance(load, cls):
        raise TypeError(f"expected a {cls.__name__}, got a {type(load).__name__}")
    return load
