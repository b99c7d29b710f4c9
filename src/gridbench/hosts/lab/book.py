"""The lab's state file: every resource is written here (and fsynced) *before* it is made,
so that ``gridbench lab down`` removes exactly what a lab made, even after a kill -9 of
``lab up`` midway, and nothing else."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError
from gridbench.store.layout import atomic_output

#: where every lab keeps its state (keys, logs, configs, the inventory): one folder per lab
STATE_ROOT = Path(os.environ.get("GRIDBENCH_LAB_ROOT", "/run/gridbench-lab"))
STATE_FILE = "state.json"
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")


def check_name(name: str) -> str:
    """A lab's name (it is part of its interfaces' names, at most 15 characters)."""
    if not NAME_RE.match(name):
        raise GridbenchError(
            f"not a lab name: {name!r}",
            where="--name",
            fix="1 to 8 lower-case letters and digits, starting with a letter (e.g. lab)",
        )
    return name


def state_dir(name: str) -> Path:
    """The lab ``name``'s folder."""
    return STATE_ROOT / check_name(name)


class LabBook:
    """The state file of one lab: its name, subnet, hosts and every resource made."""

    def __init__(self, folder: Path, data: dict[str, Any]) -> None:
        self.folder = folder
        self.data = data

    @classmethod
    def create(cls, name: str, subnet: str) -> LabBook:
        """A new lab's book (its folder made, 0700); an error if one exists."""
        folder = state_dir(name)
        STATE_ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            raise GridbenchError(
                f"a lab named {name!r} exists (or a 'lab up' of it was killed)",
                where=str(folder),
                fix=f"'gridbench lab down --name {name}' removes it, or choose another --name",
            ) from None
        book = cls(
            folder,
            {
                "name": name,
                "subnet": subnet,
                "pid": os.getpid(),
                "started": time.time(),
                "complete": False,
                "resources": [],
                "hosts": {},
            },
        )
        book.save()
        return book

    @classmethod
    def open(cls, name: str) -> LabBook | None:
        """The book of lab ``name``, None when there is no such lab; a folder with no
        readable state (``lab up`` killed before its first write) is a book with nothing."""
        folder = state_dir(name)
        if not folder.is_dir():
            return None
        try:
            data = json.loads((folder / STATE_FILE).read_text())
        except (OSError, ValueError):
            data = {"name": name, "resources": [], "hosts": {}, "complete": False}
        if not isinstance(data, dict) or not isinstance(data.get("resources"), list):
            data = {"name": name, "resources": [], "hosts": {}, "complete": False}
        return cls(folder, data)

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def resources(self) -> list[dict[str, Any]]:
        return list(self.data["resources"])

    def save(self) -> None:
        """Write the state atomically and durably, through the store's writer: a private
        temporary name, never a link planted in the lab's folder (issue 41)."""
        with atomic_output(self.folder / STATE_FILE) as tmp, open(tmp, "x") as f:
            json.dump(self.data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def record(self, kind: str, **attrs: Any) -> None:
        """Write down a resource about to be made."""
        self.data["resources"].append({"kind": kind, **attrs})
        self.save()


# -- removal -------------------------------------------------------------------------------
def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def netns_names() -> set[str]:
    """The named network namespaces of this machine."""
    r = _run(["ip", "netns", "list"])
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


def link_exists(name: str) -> bool:
    return _run(["ip", "link", "show", "dev", name]).returncode == 0


def netns_pids(ns: str) -> list[int]:
    """The processes in namespace ``ns`` (all of them the lab's: it made the namespace)."""
    r = _run(["ip", "netns", "pids", ns])
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def _kill_all(pids: list[int], grace: float = 2.0) -> list[int]:
    """SIGTERM, then SIGKILL what is left after ``grace`` s; the pids still alive."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            if not pids:
                return []
            time.sleep(0.02)
    return [p for p in pids if _alive(p)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our own child not yet reaped) is gone for our purposes
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return False
    return True


def tear_down(book: LabBook, say: Callable[[str], None]) -> list[str]:
    """Remove every resource ``book`` lists (newest first), then its folder; the errors
    (empty: nothing is left). Resources already gone are passed over."""
    errors: list[str] = []
    res = list(reversed(book.resources))
    names = netns_names()
    # 1. every process in the lab's namespaces, then the namespaces (their veth ends go too)
    for r in res:
        if r["kind"] != "netns" or r["name"] not in names:
            continue
        left = _kill_all(netns_pids(r["name"]))
        if left:
            errors.append(f"namespace {r['name']}: processes {left} did not stop")
        out = _run(["ip", "netns", "delete", r["name"]])
        if out.returncode != 0:
            errors.append(f"ip netns delete {r['name']}: {out.stderr.strip()}")
        else:
            say(f"removed namespace {r['name']}")
    # 2. links left in this namespace (a veth whose peer never moved, the bridge)
    for r in res:
        if r["kind"] in ("link", "bridge") and link_exists(r["name"]):
            out = _run(["ip", "link", "delete", r["name"]])
            # a veth goes with its peer's namespace, a moment later: gone is as good
            if out.returncode != 0 and link_exists(r["name"]):
                errors.append(f"ip link delete {r['name']}: {out.stderr.strip()}")
            elif out.returncode == 0:
                say(f"removed {r['kind']} {r['name']}")
    # 3. folders made outside the lab's own (sshd's privilege-separation folder)
    for r in res:
        if r["kind"] == "dir":
            with contextlib.suppress(OSError):
                Path(r["path"]).rmdir()  # only when empty: something else may use it now
    if not errors:
        shutil.rmtree(book.folder, ignore_errors=True)
        if book.folder.exists():
            errors.append(f"{book.folder}: could not be removed")
        else:
            say(f"removed {book.folder}")
        with contextlib.suppress(OSError):
            STATE_ROOT.rmdir()  # when no other lab is there
    return errors
