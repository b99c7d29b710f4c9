"""The inventory of hosts (docs/hosts.md): one file (or a spec's ``hosts:`` block) naming
each host once, with its address, SSH options, the Python to use there, its roles and its
node_exporter; every family's spec refers to hosts by these names.

```yaml
hosts:
  lab-1:
    address: 10.247.3.2
    ssh: {username: root, client_keys: [/run/gridbench-lab/lab/client_key]}
    python: /opt/gridbench/venv/bin/python
    roles: [client]
    exporter: http://10.247.3.2:9100/metrics
```

A name that is not there is one error with a "did you mean" (:meth:`Inventory.host`);
a malformed file is one error naming its line (:mod:`gridbench.specload`).
"""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    field_validator,
    model_validator,
)

from gridbench.errors import SpecError
from gridbench.hosts.latency import HostLatency
from gridbench.spechints import NEAR_MISS
from gridbench.specload import (
    SpecLoader,
    SpecWords,
    parse_with_overrides,
    read_spec_text,
    validate_spec,
)

Role = Literal["client", "server", "peer", "storage-client"]
#: a host's name: what specs write (``load.agents.hosts: [lab-1]``)
HostName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
DOCS = "docs/hosts.md"


class Host(BaseModel):
    """One host: how to reach it, what runs there, what it is for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: HostName
    address: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    #: asyncssh connect options, as the agents' ``ssh_options`` (port, username,
    #: client_keys, known_hosts, ...)
    ssh: dict[str, Any] = Field(default_factory=dict)
    #: the interpreter (or a venv's bin/python) that runs gridbench there; None: python3
    python: str | None = None
    roles: list[Role] = Field(default_factory=list)
    #: node_exporter's URL (http://ADDR:9100/metrics), None when the host has none
    exporter: str | None = None
    #: set by the lab: the network namespace that is this host (local tools run there)
    netns: str | None = None
    #: set by the lab for declared paths: a port on this host -> the ``address:port`` that
    #: reaches it through Toxiproxy (with the path's latency)
    proxies: dict[int, str] = Field(default_factory=dict)
    #: set by the lab for ``--latency`` paths: a Toxiproxy that reaches any port of this
    #: host with a delay (a family opens a proxy there per port it dials)
    latency: HostLatency | None = None
    #: the host's clock minus the controller's, in ms, as ``gridbench hosts check --write``
    #: measured it; the sampler uses it instead of estimating one (None: it estimates)
    clock_offset_ms: float | None = Field(default=None, ge=-86_400_000, le=86_400_000)

    @property
    def interpreter(self) -> str:
        """The Python to run there."""
        return self.python or "python3"

    @field_validator("exporter")
    @classmethod
    def _exporter_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        fix = "give node_exporter's URL, e.g. http://10.247.3.2:9100/metrics"
        try:
            url = urlsplit(v)
            port = url.port
        except ValueError as exc:
            raise ValueError(f"{v[:100]!r} is not a URL ({exc}); {fix}") from None
        if url.scheme not in ("http", "https") or not url.hostname or len(v) > 2048:
            raise ValueError(f"{v[:100]!r} is not an http(s) URL; {fix}")
        if port == 0 or any(c.isspace() for c in v):
            raise ValueError(f"{v[:100]!r} is not a usable URL; {fix}")
        return v

    @field_validator("ssh")
    @classmethod
    def _ssh_port(cls, v: dict[str, Any]) -> dict[str, Any]:
        port = v.get("port")
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535
        ):
            raise ValueError(f"port {port!r} is not a port; give 1 to 65535 (SSH: 22)")
        return v


def _name_hosts(data: Any) -> Any:
    """A host's name is its key: ``name:`` may be left out (and must match if given)."""
    if not isinstance(data, dict) or not isinstance(data.get("hosts"), dict):
        return data
    hosts: dict[Any, Any] = {}
    for key, host in data["hosts"].items():
        if isinstance(host, dict) and "name" not in host:
            host = {"name": key, **host}
        hosts[key] = host
    return {**data, "hosts": hosts}


class Inventory(BaseModel):
    """Every host by name (``hosts:``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hosts: dict[HostName, Host] = Field(min_length=1)
    _origin: str = PrivateAttr(default="the inventory")

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        return _name_hosts(data)

    @model_validator(mode="after")
    def _same_names(self) -> Inventory:
        for key, host in self.hosts.items():
            if host.name != key:
                raise ValueError(
                    f"host {key!r} says name: {host.name!r}; leave name: out (the key is "
                    "the name) or make them equal"
                )
        return self

    @property
    def origin(self) -> str:
        """Where the inventory came from (a file, or a spec's ``hosts:`` block)."""
        return self._origin

    def host(self, name: str, where: str) -> Host:
        """The host called ``name``; a SpecError at ``where`` (the spec's place that named
        it) with a "did you mean" when there is none."""
        found = self.hosts.get(name)
        if found is not None:
            return found
        near = get_close_matches(name, list(self.hosts), 1, NEAR_MISS)
        mean = f"; did you mean {near[0]!r}?" if near else ""
        raise SpecError(
            f"no host {name!r} in {self._origin}{mean}",
            where=where,
            fix=f"use one of its hosts ({', '.join(sorted(self.hosts))}) or add {name!r} "
            f"under hosts: in {self._origin} ({DOCS})",
        )

    def with_role(self, role: Role) -> list[Host]:
        """The hosts that have ``role``, in the inventory's order."""
        return [h for h in self.hosts.values() if role in h.roles]


LOADER = SpecLoader(
    model=Inventory,
    what="an inventory",
    keys="hosts:",
    template=DOCS,
    docs=DOCS,
)


def _named(inv: Inventory, origin: str) -> Inventory:
    inv._origin = origin
    return inv


def load_inventory_text(text: str, origin: str = "<inventory>") -> Inventory:
    """An inventory from YAML text; one SpecError naming the line of every problem."""
    inv, _ = LOADER.load_text(text, origin)
    return _named(inv, origin)


def load_inventory(path: str | Path) -> Inventory:
    """The inventory file at ``path`` (``hosts:`` at its top)."""
    return load_inventory_text(read_spec_text(path), str(path))


class _HostsBlock(BaseModel):
    """A spec's ``hosts:`` block, the rest of the spec left to its family."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    hosts: dict[HostName, Host] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        return _name_hosts(data)


def hosts_block(text: str, origin: str) -> Inventory | None:
    """The ``hosts:`` block of a spec's YAML ``text`` as an inventory (errors name the
    spec's lines), or None when the spec has none."""
    root, data, overridden = parse_with_overrides(text, origin, None)
    if not isinstance(data, dict) or "hosts" not in data:
        return None
    words = SpecWords("a spec", "hosts:, ...", DOCS, DOCS)
    block = validate_spec(_HostsBlock, data, root, origin, overridden, words)
    inv = Inventory.model_validate({"hosts": {k: h.model_dump() for k, h in block.hosts.items()}})
    return _named(inv, f"the hosts: block of {origin}")


def shared_access(
    inv: Inventory, names: list[str], where: str
) -> tuple[list[str], dict[str, Any], str | None]:
    """The hosts ``names`` (each checked, with a did-you-mean naming ``where[i]``) as
    (addresses, their ssh options, their python), for tools that reach several hosts with
    one set of options (job flow's agents on Dask's SSHCluster): hosts that differ in
    ``ssh`` or ``python`` are a SpecError at ``where``."""
    hosts = [inv.host(n, f"{where}[{i}]") for i, n in enumerate(names)]
    kinds = {(repr(sorted(h.ssh.items())), h.python) for h in hosts}
    if len(kinds) > 1:
        raise SpecError(
            f"the hosts {', '.join(names)} differ in ssh: or python: in {inv.origin}, and "
            "these are reached with one set of options",
            where=where,
            fix="give them the same ssh: and python: in the inventory",
        )
    return [h.address for h in hosts], dict(hosts[0].ssh), hosts[0].python
