"""Opening an environment by its name (docs/net.md "Environments"): the one table of them,
apart from :mod:`gridbench.messaging.environments` so that an environment of its own
module (``remote``) can build on that one without a cycle."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gridbench.errors import GridbenchError
from gridbench.messaging.environments import (
    HostEnv,
    LanEnv,
    NetEnvironment,
    ProcessEnv,
    RelayEnv,
)
from gridbench.messaging.model import Environment, NetSpec
from gridbench.messaging.processes import ProcessBook
from gridbench.messaging.remote_env import RemoteEnv

#: every environment by the name a spec gives it
ENVIRONMENTS: dict[str, type[NetEnvironment]] = {
    "process": ProcessEnv,
    "host": HostEnv,
    "relay": RelayEnv,
    "lan": LanEnv,
    "remote": RemoteEnv,
}


@contextmanager
def open_environment(
    name: Environment, spec: NetSpec, workdir: Path, book: ProcessBook
) -> Iterator[NetEnvironment]:
    """Build environment ``name`` for a run, yield it, and tear it down afterwards."""
    workdir.mkdir(parents=True, exist_ok=True)
    kind = ENVIRONMENTS.get(name)
    if kind is None:
        raise GridbenchError(
            f"unknown environment {name!r}",
            where="environments",
            fix=f"use one of {', '.join(ENVIRONMENTS)}",
        )
    env = kind(spec, workdir, book)
    try:
        yield env
    finally:
        env.close()
