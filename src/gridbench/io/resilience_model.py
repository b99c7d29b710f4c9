"""The ``resilience`` spec section: a write load on a replicated file system, faults on a
schedule against its servers, the time to recover, and an integrity check of every byte
written. Kept apart from :mod:`gridbench.io.model`, which only holds the field."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridbench.hosts.inventory import HostName
from gridbench.io.clients_model import StartHow
from gridbench.units import Duration, Size

#: kill: SIGKILL; stop: SIGTERM; pause: SIGSTOP; resume: SIGCONT;
#: restart: the system brings a dead server back (gluster volume start --force) and
#: a paused one is continued.
FaultAction = Literal["kill", "stop", "pause", "resume", "restart"]
#: The actions that take a server away, and those that bring it back.
TAKES_DOWN: frozenset[str] = frozenset({"kill", "stop", "pause"})
BRINGS_BACK: frozenset[str] = frozenset({"resume", "restart"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FaultSpec(_Strict):
    """One fault: at ``at`` seconds into the load, ``action`` on ``server``."""

    at: Duration = Field(ge=0, description="seconds after the write load starts")
    action: FaultAction
    server: str = Field(
        pattern=r"^(brick[1-9][0-9]{0,2}|[A-Za-z0-9_.-]+:/[^\s]*)$",
        description="brickN (the volume's N-th brick, from 1) or HOST:/PATH as gluster names it",
    )


class GlusterSystem(_Strict):
    """How gridbench reaches a GlusterFS volume's servers: its ``gluster`` command line."""

    kind: Literal["glusterfs"] = "glusterfs"
    volume: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    cli: list[str] = Field(
        default_factory=lambda: ["gluster"],
        min_length=1,
        description="the gluster command and options, e.g. [gluster, --glusterd-sock=PATH]",
    )


class ResilienceSpec(_Strict):
    """Writers fill a target with checksummed files while faults hit its servers; after
    recovery every file is read back and verified."""

    target: str = Field(description="the target (a mount of the replicated file system)")
    system: GlusterSystem | None = Field(
        default=None, description="the servers behind the target; needed for faults"
    )
    duration: Duration = Field(default=20.0, gt=0, le=3600, description="the write load")
    writers: int = Field(default=2, ge=1, le=64)
    file_size: Size = Field(default=1024**2, gt=0, le=1024**3)
    max_bytes: Size = Field(
        default=2 * 1024**3,
        gt=0,
        description="the writers stop once this much is written (the target never fills up)",
    )
    interval: Duration = Field(default=0.5, gt=0, description="bins of the series over time")
    faults: list[FaultSpec] = Field(default_factory=list)
    recovery_timeout: Duration = Field(
        default=120.0, gt=0, description="how long a server may take to be back and healed"
    )
    verify_threads: int = Field(default=2, ge=1, le=64, description="integrity check readers")
    hosts: list[HostName] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="inventory hosts the writers run on (``writers`` each) instead of here; "
        "the target must be the same storage at the same path on each",
    )
    inventory: str | None = Field(
        default=None, min_length=1, max_length=4096, description="the hosts file of ``hosts``"
    )
    start: StartHow = Field(
        default="auto", description="netns (a lab host) | ssh | auto: how each host's writers start"
    )

    @model_validator(mode="after")
    def _schedule(self) -> ResilienceSpec:
        if self.hosts is not None and self.inventory is None:
            raise ValueError(
                "resilience.hosts needs resilience.inventory, the hosts file that names them"
            )
        dup = sorted({h for h in self.hosts or [] if (self.hosts or []).count(h) > 1})
        if dup:
            raise ValueError(f"resilience.hosts names {', '.join(dup)} twice")
        if self.faults and self.system is None:
            raise ValueError(
                "faults need resilience.system (e.g. {kind: glusterfs, volume: NAME}) to "
                "reach the servers"
            )
        for i, f in enumerate(self.faults):
            if f.at >= self.duration:
                raise ValueError(
                    f"faults.{i} at {f.at:g} s is not before the end of the load "
                    f"({self.duration:g} s): make it earlier or the duration longer"
                )
        return self


class HttpClientsSpec(_Strict):
    """N HTTP/WebDAV clients at once: each PUTs its own file, then each GETs it back
    (checked by sha256); per-client and aggregate rates, and the time until a refused
    upload was refused."""

    url: str = Field(pattern=r"^https?://")
    clients: list[Annotated[int, Field(ge=1, le=256)]] = Field(
        default_factory=lambda: [1, 4], min_length=1
    )
    size: Size = Field(default=16 * 1024**2, gt=0, le=64 * 1024**3)
    repetitions: int = Field(default=1, ge=1, le=100)
    timeout: Duration = Field(default=600.0, gt=0, description="per request")
    auth_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="name of an environment variable holding USER:PASSWORD (HTTP basic auth)",
    )

    @model_validator(mode="after")
    def _no_credentials(self) -> HttpClientsSpec:
        if "@" in urlsplit(self.url).netloc:
            raise ValueError(
                "http_clients.url must not contain credentials (user:password@); put "
                "USER:PASSWORD in an environment variable and name it in auth_env"
            )
        return self
