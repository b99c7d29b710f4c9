"""A spec's ``sampling:`` block, the same in every family (docs/spec.md, docs/hosts.md)::

    sampling:
      hosts: [local, lab-2]            # names from the inventory; local: the controller
      interval: 1s
      inventory: /run/gridbench-lab/lab/inventory.yaml   # or the spec's hosts: block
      client: local                     # the load's own host (the client-bound rule)
      processes:
        - {host: lab-2, name: slurmctld}
        - {host: local, pid: 1234, label: ARC}

:func:`host_targets` turns it into the sampler's targets; a host name the inventory lacks
is one SpecError with a "did you mean", before anything starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from gridbench.errors import SpecError
from gridbench.specload import SpecProblem
from gridbench.units import PositiveDuration

if TYPE_CHECKING:
    from gridbench.hosts.sampling.sampler import HostTarget

#: the host name that means the controller itself (when the inventory has no such host)
LOCAL = "local"
#: a host's name (an inventory name fits): also a file name under RUN/samples
SampledHost = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


class SampledProcess(BaseModel):
    """A process whose CPU and RSS are sampled on ``host``: every process called ``name``
    (psutil's name, found again at each sample) or the one with ``pid``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: SampledHost = LOCAL
    name: str | None = Field(default=None, min_length=1, max_length=255)
    pid: int | None = Field(default=None, gt=0)
    label: str | None = Field(default=None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _one(self) -> SampledProcess:
        if (self.name is None) == (self.pid is None):
            raise ValueError(
                "give exactly one of name (e.g. slurmctld) or pid, e.g. "
                "{host: lab-2, name: slurmctld}"
            )
        return self

    @property
    def shown(self) -> str:
        """The label in the results: ``label``, else the name, else ``pid <n>``."""
        return self.label or self.name or f"pid {self.pid}"

    def probe_target(self) -> dict[str, Any]:
        """What the probe is told: label and name or pid."""
        out: dict[str, Any] = {"label": self.shown}
        if self.name is not None:
            out["name"] = self.name
        else:
            out["pid"] = self.pid
        return out


class SamplingSpec(BaseModel):
    """Server sampling during a run: each host's CPU, load, memory, disk and network."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hosts: list[SampledHost] = Field(min_length=1, max_length=256)
    interval: PositiveDuration = Field(default=1.0, ge=0.05, le=3600)
    inventory: str | None = Field(default=None, min_length=1, max_length=4096)
    client: SampledHost = LOCAL
    processes: list[SampledProcess] = Field(default_factory=list, max_length=256)

    @model_validator(mode="after")
    def _check(self) -> SamplingSpec:
        dup = sorted({h for h in self.hosts if self.hosts.count(h) > 1})
        if dup:
            raise ValueError(f"sampling.hosts: each host once; repeated: {', '.join(dup)}")
        for p in self.processes:
            if p.host not in self.hosts:
                raise ValueError(
                    f"sampling.processes: host {p.host!r} is not in sampling.hosts "
                    f"({', '.join(self.hosts)}); add it there"
                )
        labels = [(p.host, p.shown) for p in self.processes]
        rep = sorted({f"{h}/{lab}" for h, lab in labels if labels.count((h, lab)) > 1})
        if rep:
            raise ValueError(
                f"sampling.processes: labels must be unique per host; repeated: {', '.join(rep)}"
            )
        return self


def _known_offset(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def host_targets(
    spec: SamplingSpec,
    inventory: Any | None,
    *,
    where: str = "sampling.hosts",
    offsets: dict[str, float] | None = None,
) -> list[HostTarget]:
    """The sampler's targets for ``spec``: each host looked up in ``inventory`` (a
    :class:`gridbench.hosts.inventory.Inventory`); ``local`` is the controller unless the
    inventory names a host so. ``offsets``: hosts' known clock offsets (host minus
    controller, seconds); else a host's ``clock_offset_ms`` in the inventory (written by
    ``gridbench hosts check --write``); else the sampler estimates it."""
    from gridbench.hosts.sampling.sampler import HostTarget

    offsets = offsets or {}
    out = []
    for i, name in enumerate(spec.hosts):
        procs = tuple(p.probe_target() for p in spec.processes if p.host == name)
        known = inventory is not None and name in inventory.hosts
        if name == LOCAL and not known:
            out.append(HostTarget(name, processes=procs, offset_s=0.0))
            continue
        if inventory is None:
            raise SpecError(
                f"host {name!r} is sampled but no inventory names it",
                where=f"{where}[{i}]",
                fix="give sampling.inventory: PATH (a hosts file, e.g. the one 'gridbench lab "
                "up' writes) or a hosts: block, or sample 'local' only (docs/hosts.md)",
            )
        host = inventory.host(name, f"{where}[{i}]")
        out.append(
            HostTarget(
                name,
                exporter=host.exporter,
                address=host.address,
                ssh=dict(host.ssh),
                python=host.interpreter,
                processes=procs,
                offset_s=offsets.get(name, _known_offset(host.clock_offset_ms)),
            )
        )
    return out


def load_targets(spec: SamplingSpec, inline: Any | None = None) -> list[HostTarget]:
    """:func:`host_targets` with the inventory ``spec.inventory`` names (else ``inline``,
    a spec's own hosts: block, else none)."""
    inventory = inline
    if spec.inventory is not None:
        from gridbench.hosts.inventory import load_inventory

        inventory = load_inventory(spec.inventory)
    return host_targets(spec, inventory)


def sampling_problem(spec: SamplingSpec | None) -> SpecProblem | None:
    """A host of ``spec`` that its inventory lacks, as a family's spec check reports it
    (placed on the spec's line, with a "did you mean"); None when every host is there, or
    when the inventory file is not here to read (``run`` reads it, and says so)."""
    if spec is None or spec.inventory is None:
        return None
    from pathlib import Path

    from gridbench.hosts.inventory import load_inventory

    if not Path(spec.inventory).is_file():
        return None
    try:
        inventory = load_inventory(spec.inventory)
        host_targets(spec, inventory)
    except SpecError as exc:
        where = exc.where or ""
        loc: tuple[int | str, ...] = ("sampling", "inventory")
        if where.startswith("sampling.hosts["):
            loc = ("sampling", "hosts", int(where[len("sampling.hosts[") : -1]))
        return SpecProblem(loc, exc.message, exc.fix or f"see {spec.inventory}")
    return None
