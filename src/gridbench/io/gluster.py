"""A GlusterFS volume's servers as gridbench sees them: its bricks (name, pid, online),
the entries still to heal, and the two actions that bring a brick back. Everything goes
through the ``gluster`` command line (argv lists, never a shell); its answers are foreign
input, parsed by the pure functions here (XML through defusedxml)."""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

from gridbench.errors import BackendError
from gridbench.io.resilience_model import GlusterSystem

CLI_TIMEOUT_S = 30.0
#: glusterd runs one transaction per volume at a time and refuses a second meanwhile.
BUSY = "Another transaction is in progress"
BUSY_RETRIES = 40
BUSY_PAUSE_S = 0.25
_ENTRIES = re.compile(r"^Number of entries:\s*(\d+)\s*$", re.M)


@dataclass(frozen=True)
class Brick:
    """One brick: ``brickN`` in the volume's order, its gluster name, its process."""

    name: str
    address: str  # HOST:/PATH, as gluster names it
    pid: int | None
    online: bool


def _text(node: Element, tag: str) -> str:
    found = node.find(tag)
    return (found.text or "").strip() if found is not None else ""


def parse_status_xml(text: str, where: str) -> list[Brick]:
    """The bricks of ``gluster volume status VOL --xml`` (self-heal daemons left out)."""
    try:
        root = fromstring(text)
    except (ParseError, DefusedXmlException) as exc:
        raise BackendError(
            f"gluster's volume status is not XML: {exc}",
            where=where,
            fix="run the command by hand; is glusterd running and the volume started?",
        ) from None
    if _text(root, "opRet") not in ("0", ""):
        raise BackendError(
            f"gluster refused: {_text(root, 'opErrstr') or 'no reason given'}",
            where=where,
            fix="check the volume name and that the volume is started",
        )
    bricks: list[Brick] = []
    for node in root.iter("node"):
        host, path = _text(node, "hostname"), _text(node, "path")
        if not path.startswith("/"):
            continue  # Self-heal Daemon, NFS server: not bricks
        pid = _text(node, "pid")
        online = _text(node, "status") == "1"
        bricks.append(
            Brick(
                name=f"brick{len(bricks) + 1}",
                address=f"{host}:{path}",
                pid=int(pid) if pid.isdigit() and int(pid) > 0 and online else None,
                online=online,
            )
        )
    return bricks


def parse_heal_count(text: str) -> int | None:
    """Entries still to heal over every brick (``volume heal VOL statistics heal-count``);
    None when gluster printed no count (a brick down answers no number)."""
    counts = [int(n) for n in _ENTRIES.findall(text)]
    return sum(counts) if counts else None


class Gluster:
    """The ``gluster`` command for one volume."""

    def __init__(self, system: GlusterSystem) -> None:
        self.system = system
        self.volume = system.volume
        self.lock = threading.Lock()  # one command at a time from this process

    def _run(self, *args: str, check: bool = True) -> str:
        """The command's output; retried while glusterd is busy with another transaction
        (the self-heal daemon's or another client's)."""
        for _ in range(BUSY_RETRIES):
            with self.lock:
                out = self._run_once(*args, check=check)
            if BUSY not in out:
                return out
            time.sleep(BUSY_PAUSE_S)
        return out

    def _run_once(self, *args: str, check: bool) -> str:
        argv = [*self.system.cli, "--mode=script", *args]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
            )
        except FileNotFoundError:
            raise BackendError(
                "the gluster command was not found",
                where="spec field 'resilience.system.cli'",
                fix="install glusterfs-server (Debian) or give the command's path in cli",
            ) from None
        except subprocess.TimeoutExpired:
            raise BackendError(
                f"gluster did not answer within {CLI_TIMEOUT_S:g} s",
                where=shlex.join(argv),
                fix="check glusterd is running",
            ) from None
        if BUSY in done.stdout + done.stderr:
            return BUSY
        if check and done.returncode != 0:
            why = (done.stdout + done.stderr).strip().splitlines()
            raise BackendError(
                f"gluster failed: {why[-1] if why else f'exit {done.returncode}'}",
                where=shlex.join(argv),
                fix="check glusterd is running and the volume exists",
            )
        return done.stdout

    def bricks(self) -> list[Brick]:
        argv = ["volume", "status", self.volume, "--xml"]
        return parse_status_xml(self._run(*argv, check=False), shlex.join(argv))

    def heal_count(self) -> int | None:
        return parse_heal_count(
            self._run("volume", "heal", self.volume, "statistics", "heal-count", check=False)
        )

    def start_force(self) -> None:
        """Start every brick that is not running (gluster's way to bring one back)."""
        self._run("volume", "start", self.volume, "force")

    def heal(self) -> None:
        """Ask for an index heal now (the self-heal daemon would also start on its own)."""
        self._run("volume", "heal", self.volume, check=False)


def find_brick(bricks: list[Brick], server: str) -> Brick | None:
    """The brick a fault names: ``brickN`` or ``HOST:/PATH``."""
    return next((b for b in bricks if server in (b.name, b.address)), None)
