"""The ``clients:`` block of an io spec: fio from many client hosts, through fio's own
client/server mode (``fio --server`` started by gridbench on each inventory host, ``fio
--client`` from the controller; docs/io.md, "Many client hosts").

```yaml
clients:
  inventory: /run/gridbench-lab/lab/inventory.yaml
  hosts: [lab-1, lab-2, lab-3]    # inventory names; host i is client i
  counts: [1, 2, 3]               # the DEISA series: N clients, each on its own host
  tests: [write, read]
  same_file: true                 # two clients on two hosts read one file at once
  compare_hosts: true             # each host alone: the client machines compared
```
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridbench.errors import SpecError
from gridbench.hosts.inventory import HostName
from gridbench.specload import SpecProblem
from gridbench.units import Size

ClientTest = Literal["write", "read", "random_read", "random_write"]
#: how a host's fio server is started: in its network namespace (a lab host on this
#: machine), over SSH, or netns when the host has one and ssh otherwise
StartHow = Literal["auto", "netns", "ssh"]
WHERE = "clients"


def _write_read() -> list[ClientTest]:
    return ["write", "read"]


class ClientsSpec(BaseModel):
    """fio on several client hosts at once against each target (fio --server/--client)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    inventory: str = Field(min_length=1, max_length=4096, description="the hosts file")
    hosts: list[HostName] = Field(min_length=1, max_length=64)
    counts: list[Annotated[int, Field(ge=1, le=64)]] | None = Field(
        default=None,
        description="the DEISA series: N clients, each on its own host (the first N hosts); "
        "default 1 .. len(hosts)",
    )
    tests: list[ClientTest] = Field(default_factory=lambda: _write_read(), min_length=1)
    same_file: bool = Field(
        default=True, description="two clients on the first two hosts read one file at once"
    )
    compare_hosts: bool = Field(
        default=True, description="each host alone runs the tests: the machines compared"
    )
    file_size: Size | None = Field(
        default=None, gt=0, description="each client's file; default iozone.file_size"
    )
    rate: Size | None = Field(
        default=None, gt=0, description="a cap on each client's bytes/s (fio rate=), e.g. 8M"
    )
    port: int = Field(default=8765, ge=1024, le=65535, description="fio --server's port")
    start: StartHow = "auto"
    fio: str = Field(default="fio", min_length=1, description="fio on the client hosts")

    @model_validator(mode="after")
    def _shape(self) -> ClientsSpec:
        dup = sorted({h for h in self.hosts if self.hosts.count(h) > 1})
        if dup:
            raise ValueError(f"clients.hosts names {', '.join(dup)} twice: one client per host")
        too_many = [n for n in self.counts or [] if n > len(self.hosts)]
        if too_many:
            raise ValueError(
                f"clients.counts {too_many[0]} is more than the {len(self.hosts)} hosts: each "
                "client has a host of its own (add hosts or lower the count)"
            )
        if self.same_file and len(self.hosts) < 2:
            raise ValueError("clients.same_file needs two hosts (or same_file: false)")
        return self

    @property
    def series(self) -> list[int]:
        """The client counts of the DEISA series, in order."""
        return list(self.counts) if self.counts else list(range(1, len(self.hosts) + 1))


def clients_problem(spec: ClientsSpec | None) -> SpecProblem | None:
    """A client host the inventory lacks (with a "did you mean"), placed on the spec's line;
    None when every host is there, or when the inventory is not here to read (``run``
    reads it, and says so)."""
    return None if spec is None else hosts_problem(spec.inventory, spec.hosts, WHERE)


def hosts_problem(inventory: str | None, hosts: Sequence[str], where: str) -> SpecProblem | None:
    """A host of ``where.hosts`` that ``inventory`` lacks, placed on its line (``where`` is
    a dotted field path, e.g. ``resilience``); None when every host is there or the
    inventory is not here to read."""
    if inventory is None or not Path(inventory).is_file():
        return None
    from gridbench.hosts.inventory import load_inventory

    try:
        inv = load_inventory(inventory)
        for i, name in enumerate(hosts):
            inv.host(name, f"{where}.hosts[{i}]")
    except SpecError as exc:
        at = exc.where or ""
        loc: tuple[int | str, ...] = (*where.split("."), "inventory")
        if at.startswith(f"{where}.hosts["):
            loc = (*where.split("."), "hosts", int(at[len(where) + 7 : -1]))
        return SpecProblem(loc, exc.message, exc.fix or f"see {inventory}")
    return None
