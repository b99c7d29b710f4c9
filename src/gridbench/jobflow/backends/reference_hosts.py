"""The reference grid split across two inventory hosts (docs/reference-grid.md, "Tiers on
several hosts"): the bridge and worker pool on one (``--tier bridge``), the CE on another
(``--tier ce --bridge-url URL``), each started over SSH with the host's python
(``python -m gridbench.jobflow.reference``), listening on its host's address.

Each tier's stderr comes back over its SSH channel into a local log, whose tail is the
error when a tier does not start. A tier stops when its stdin closes (``--stop-on-eof``):
when the backend closes, and when the controller dies and the connection with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from gridbench.errors import BackendError, SpecError
from gridbench.hosts.inventory import Host, HostName, Inventory, load_inventory

WHERE = "backend.options.hosts"
#: how long an SSH connection to a tier's host may take
CONNECT_TIMEOUT_S = 15.0
#: lines of a tier's log an error quotes
TAIL_LINES = 15


class TierHosts(BaseModel):
    """``backend.options.hosts``: the inventory host of each tier."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ce: HostName
    bridge: HostName

    def check(self, inventory: str | None, url: str | None) -> Inventory:
        """Both names in the inventory (a typo: one SpecError with a did-you-mean)."""
        if url:
            raise SpecError(
                "url names a running grid, hosts: says where to start one: give one of them",
                where=WHERE,
                fix="drop backend.options.url to start the tiers on their hosts",
            )
        if not inventory:
            raise SpecError(
                "hosts: names inventory hosts, but no inventory is given",
                where="backend.options.inventory",
                fix="set backend.options.inventory to the hosts file (a lab's: "
                "/run/gridbench-lab/NAME/inventory.yaml; docs/hosts.md)",
            )
        inv = load_inventory(inventory)
        inv.host(self.ce, f"{WHERE}.ce")
        inv.host(self.bridge, f"{WHERE}.bridge")
        return inv


@dataclass
class TierProcess:
    """One tier running on its host: its URL, SSH connection and process, local log."""

    tier: str
    host: Host
    url: str
    log: Path
    conn: Any
    proc: Any
    drain: asyncio.Task[None] | None = field(default=None, repr=False)

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Close its stdin (it stops, closing its reports), then the connection."""
        with contextlib.suppress(Exception):
            self.proc.stdin.write_eof()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout_s)
        except Exception:
            with contextlib.suppress(Exception):
                self.proc.terminate()
        if self.drain is not None:
            self.drain.cancel()
            with contextlib.suppress(BaseException):
                await self.drain
        self.conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.conn.wait_closed(), 5)


def tier_command(
    host: Host,
    tier: str,
    preset: str,
    overrides: dict[str, Any],
    reports_dir: str,
    bridge_url: str | None,
) -> str:
    """The remote command line that runs ``tier`` on ``host`` (quoted for its shell)."""
    argv = [host.interpreter, "-m", "gridbench.jobflow.reference", "--tier", tier]
    argv += ["--host", host.address, "--allow-remote", "--port", "0", "--preset", preset]
    argv += ["--config-json", json.dumps(overrides), "--reports-dir", reports_dir]
    argv += ["--stop-on-eof"]
    if bridge_url:
        argv += ["--bridge-url", bridge_url]
    return shlex.join(argv)


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of a tier's log."""
    try:
        text = path.read_bytes()[-16384:].decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


async def _drain(stream: Any, path: Path) -> None:
    with open(path, "ab") as out:
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            out.write(chunk)
            out.flush()


async def start_tier(
    tier: str,
    host: Host,
    command: str,
    log: Path,
    timeout_s: float,
) -> TierProcess:
    """Start ``command`` on ``host`` over SSH; its URL once it prints ``listening on``,
    else a BackendError quoting its log's tail."""
    import asyncssh

    where = f"{WHERE}.{tier}"
    fix = (
        f"check that {host.interpreter} on {host.name} runs gridbench "
        "('gridbench hosts check INVENTORY'), and the tier's log above"
    )
    try:
        conn = await asyncio.wait_for(asyncssh.connect(host.address, **host.ssh), CONNECT_TIMEOUT_S)
    except (OSError, asyncssh.Error, TimeoutError, ValueError, TypeError) as exc:
        raise BackendError(
            f"cannot reach {host.name} ({host.address}) over SSH to start the {tier} tier: "
            f"{type(exc).__name__}: {exc}",
            where=where,
            fix=f"'gridbench hosts check' the inventory; is {host.name} up?",
        ) from None
    started = False
    try:
        proc = await conn.create_process(command, encoding=None)
        drain = asyncio.get_running_loop().create_task(_drain(proc.stderr, log))
        tier_proc = TierProcess(tier, host, "", log, conn, proc, drain)
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout_s)
        except TimeoutError:
            line = b""
        text = line.decode(errors="replace").strip()
        if not text.startswith("listening on "):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 3)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(drain), 2)
            await tier_proc.stop(timeout_s=2)
            said = log_tail(log) or text or f"no output within {timeout_s:g} s"
            raise BackendError(
                f"the reference grid's {tier} tier did not start on {host.name} "
                f"({host.address}):\n{said}",
                where=where,
                fix=fix,
            )
        tier_proc.url = text.removeprefix("listening on ").strip()
        started = True
        return tier_proc
    except (OSError, asyncssh.Error) as exc:
        raise BackendError(
            f"starting the {tier} tier on {host.name} failed: {type(exc).__name__}: {exc}",
            where=where,
            fix=fix,
        ) from None
    finally:
        if not started:
            conn.close()


async def start_tiers(
    hosts: TierHosts,
    inventory: str,
    preset: str,
    overrides: dict[str, Any],
    tmp: Path,
    reports_dir: str | None,
    timeout_s: float,
) -> list[TierProcess]:
    """The bridge tier, then the CE tier handing jobs to it: ``[bridge, ce]``."""
    inv = hosts.check(inventory, None)
    out: list[TierProcess] = []
    try:
        bridge_url: str | None = None
        for tier, name in (("bridge", hosts.bridge), ("ce", hosts.ce)):
            host = inv.host(name, f"{WHERE}.{tier}")
            reports = str(Path(reports_dir) / tier if reports_dir else tmp / f"reports-{tier}")
            cmd = tier_command(host, tier, preset, overrides, reports, bridge_url)
            proc = await start_tier(tier, host, cmd, tmp / f"{tier}.stderr", timeout_s)
            out.append(proc)
            bridge_url = proc.url
    except BaseException:
        for p in reversed(out):
            await p.stop()
        raise
    return out


def lab_demo_sets(lab: str) -> tuple[list[str], str]:
    """``gridbench demo --lab NAME``: the ``--set`` overrides that put the CE on the lab's
    first host and the bridge and workers on its second, both sampled; and a sentence
    saying so."""
    from gridbench.hosts.lab.book import STATE_ROOT

    path = STATE_ROOT / lab / "inventory.yaml"
    if not path.is_file():
        raise SpecError(
            f"no lab {lab!r} here (no {path})",
            where="--lab",
            fix=f"make it with 'gridbench lab up --name {lab}' (root; docs/hosts.md)",
        )
    names = list(load_inventory(path).hosts)
    if len(names) < 2:
        raise SpecError(
            f"lab {lab!r} has {len(names)} host; the split grid needs two",
            where="--lab",
            fix=f"'gridbench lab down --name {lab}', then 'lab up --name {lab} --hosts 2'",
        )
    ce, bridge = names[0], names[1]
    sets = [
        f"backend.options.hosts.ce={ce}",
        f"backend.options.hosts.bridge={bridge}",
        f"backend.options.inventory={path}",
        f"sampling.hosts=[{ce}, {bridge}]",
        f"sampling.inventory={path}",
    ]
    return sets, f"CE on {ce}, bridge and workers on {bridge}, both sampled"
