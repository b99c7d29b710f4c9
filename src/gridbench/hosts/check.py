"""``gridbench hosts check INVENTORY``: reach each host and say what is missing, with the fix.

Per host, every step time-boxed (a host that hangs fails its row, it does not hang the
check), all hosts at once:

1. ``ssh``: log in with the host's ``ssh`` options (asyncssh);
2. ``python``: its interpreter runs and prints its version and gridbench's (or none);
3. ``clock``: the offset of its clock from ours by the four-timestamp exchange over that
   SSH session (:func:`offset_from`: the probe with the shortest round trip wins; its
   half round trip is the bound);
4. ``exporter``: its node_exporter URL answers with ``node_`` series.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gridbench import __version__
from gridbench.hosts.inventory import Host, Inventory

if TYPE_CHECKING:
    from rich.console import Console

SSH_TIMEOUT_S = 15.0
PROBES = 16
EXPORTER_TIMEOUT_S = 5.0
#: run there: versions first, then one clock reading per line read
REMOTE = (
    "import json,sys,time,platform\n"
    "try:\n import gridbench; v=gridbench.__version__\n"
    "except Exception: v=None\n"
    "print(json.dumps({'python': platform.python_version(), 'gridbench': v}), flush=True)\n"
    "for line in sys.stdin:\n"
    " print(time.time_ns(), flush=True)\n"
)


@dataclass
class Step:
    """One step of one host: passed, what was found, the fix when it failed."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


@dataclass
class HostCheck:
    """One host's row."""

    host: str
    address: str
    steps: list[Step] = field(default_factory=list)
    #: the clock step's offset (host minus controller) and its bound, ms
    offset_ms: float | None = None
    bound_ms: float | None = None

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)


def offset_from(samples: list[tuple[int, int, int]]) -> tuple[float, float]:
    """(offset, bound) in ms from probes (sent, their clock, received), all in ns: the
    remote clock minus ours at the probe with the shortest round trip, ± half of it."""
    t0, t1, t3 = min(samples, key=lambda s: s[2] - s[0])
    offset = t1 - (t0 + t3) / 2
    return offset / 1e6, (t3 - t0) / 2e6


def _ssh_fix(host: Host) -> str:
    return (
        f"check {host.name}'s address ({host.address}), that sshd runs there and its ssh "
        "options in the inventory (port, username, client_keys, known_hosts)"
    )


async def check_host(host: Host) -> HostCheck:
    """Every step for ``host`` (the ones after a failed login are not run)."""
    import asyncssh

    row = HostCheck(host.name, host.address)
    try:
        async with asyncio.timeout(SSH_TIMEOUT_S):
            async with asyncssh.connect(host.address, **host.ssh) as conn:
                row.steps.append(Step("ssh", True, f"logged in to {host.address}"))
                if not await _python_and_clock(conn, host, row):
                    conn.abort()  # it may go on printing: a polite close would wait on it
                    return row
    except TimeoutError:
        step = "ssh" if not row.steps else "clock"
        row.steps.append(Step(step, False, f"no answer within {SSH_TIMEOUT_S:g} s", _ssh_fix(host)))
        return row
    except (OSError, asyncssh.Error, ValueError) as exc:
        what = _ssh_words(exc)
        step = "ssh" if not row.steps else "clock"
        row.steps.append(Step(step, False, what[:300], _ssh_fix(host)))
        return row
    row.steps.append(await asyncio.to_thread(_exporter, host))
    return row


async def _python_and_clock(conn: Any, host: Host, row: HostCheck) -> bool:
    """The python and clock steps over ``conn``; False when the python step failed."""
    python = host.interpreter
    # bytes: what it prints is foreign, and need not be text
    proc = await conn.create_process(shlex.join([python, "-c", REMOTE]), encoding=None)
    first = await proc.stdout.readline()  # at most SSH's window (2 MiB) without a newline
    try:
        info = json.loads(first)
        if not isinstance(info, dict):
            raise ValueError("not gridbench's answer")
    except ValueError:
        err: list[str] = []
        with contextlib.suppress(TimeoutError):  # what it said before it ended, if it did
            got = await asyncio.wait_for(proc.stderr.read(4096), 2.0)
            err = got.decode(errors="replace").strip().splitlines()
        said = err[-1] if err else f"it printed {first[:60]!r}" if first else "no output"
        row.steps.append(
            Step(
                "python",
                False,
                f"{python} did not run: {said}"[:300],
                f"install Python 3 on {host.name}, or set python: in the "
                "inventory to its interpreter (or a venv's bin/python)",
            )
        )
        return False
    row.steps.append(_versions(host, python, info))
    samples: list[tuple[int, int, int]] = []
    for _ in range(PROBES):
        t0 = time.time_ns()
        proc.stdin.write(b"x\n")
        line = await proc.stdout.readline()
        t3 = time.time_ns()
        samples.append((t0, int(line), t3))
    proc.stdin.write_eof()
    off, bound = offset_from(samples)
    row.offset_ms, row.bound_ms = off, bound
    row.steps.append(Step("clock", True, f"{off:+.3f} ms ± {bound:.3f} ms"))
    return True


def _ssh_words(exc: BaseException) -> str:
    """One line for an SSH failure (never a traceback)."""
    import asyncssh

    if isinstance(exc, asyncssh.PermissionDenied):
        return "the host refused the key (permission denied)"
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return f"its host key is not the one known_hosts expects: {exc}"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: no sshd listens there"
    text = str(exc) or type(exc).__name__
    return f"cannot log in: {text}"


def _versions(host: Host, python: str, info: dict[str, Any]) -> Step:
    theirs = str(info["gridbench"])[:40] if info.get("gridbench") is not None else None
    detail = f"Python {str(info.get('python'))[:40]}, gridbench {theirs or 'not installed'}"
    if theirs is None:
        return Step(
            "python",
            False,
            detail,
            f"install gridbench {__version__} for {python} on {host.name} "
            f"({python} -m pip install gridbench=={__version__})",
        )
    if theirs != __version__:
        return Step(
            "python",
            False,
            f"{detail}; this controller runs {__version__}",
            f"install gridbench {__version__} there ({python} -m pip install "
            f"gridbench=={__version__})",
        )
    return Step("python", True, detail)


def _exporter(host: Host) -> Step:
    if not host.exporter:
        return Step("exporter", True, "none declared (host-wide figures from an SSH sampler)")
    from gridbench.hosts.sampling.deadline_http import deadline_client
    from gridbench.hosts.sampling.exporter import fetch

    with deadline_client() as client:  # the sampler's reader: a deadline on the whole answer
        body = fetch(client, host.exporter, EXPORTER_TIMEOUT_S)
    if not isinstance(body, str):
        return Step(
            "exporter",
            False,
            body.text[:300],
            f"start node_exporter on {host.name} (apt-get install prometheus-node-exporter) "
            "or correct exporter: in the inventory (or remove it)",
        )
    series = sum(1 for line in body.splitlines() if line.startswith("node_"))
    if not series:
        return Step(
            "exporter",
            False,
            f"{host.exporter} answers, but with no node_ series",
            "point exporter: at node_exporter's /metrics",
        )
    return Step("exporter", True, f"{series} node_ series")


async def check_hosts(inv: Inventory, names: list[str] | None = None) -> list[HostCheck]:
    """Check every host of ``inv`` (or those ``names``), all at once."""
    hosts = [inv.hosts[n] for n in names] if names else list(inv.hosts.values())
    return list(await asyncio.gather(*(check_host(h) for h in hosts)))


def render_checks(rows: list[HostCheck], console: Console) -> None:
    """A table of the hosts and steps, then each failure with its fix."""
    from rich.table import Table

    from gridbench.fmt import safe_markup

    table = Table(title="hosts", show_lines=False)
    names = ("ssh", "python", "clock", "exporter")
    table.add_column("host")
    for n in names:
        table.add_column(n)
    for row in rows:
        cells = []
        for n in names:
            s = next((s for s in row.steps if s.name == n), None)
            if s is None:
                cells.append("[dim]-[/]")
            else:
                mark = "[green]ok[/]" if s.ok else "[red]FAIL[/]"
                cells.append(f"{mark} {safe_markup(s.detail)}")
        table.add_row(safe_markup(row.host), *cells)
    console.print(table)
    for row in rows:
        for s in row.steps:
            if not s.ok:
                console.print(
                    f"[red]{safe_markup(row.host)}[/]: {s.name}: {safe_markup(s.detail)}"
                    + (f"\n  fix: {safe_markup(s.fix)}" if s.fix else "")
                )
    bad = sum(not r.ok for r in rows)
    console.print(
        f"{len(rows) - bad} of {len(rows)} hosts ready" + (f"; {bad} failed" if bad else "")
    )


def write_offsets(path: Path, rows: list[HostCheck]) -> list[str]:
    """Each measured clock offset written into the inventory file at ``path`` as its
    host's ``clock_offset_ms`` (the file edited in place, its comments and order kept;
    written whole, then renamed over it), for the sampler to use. The hosts written."""
    from ruamel.yaml import YAML

    from gridbench.hosts.inventory import load_inventory_text
    from gridbench.store.layout import write_text_atomic

    yaml = YAML()  # round trip: comments and key order stay
    yaml.preserve_quotes = True
    text = path.read_text(encoding="utf-8")
    doc = yaml.load(text)
    hosts = doc.get("hosts") if isinstance(doc, dict) else None
    done: list[str] = []
    for row in rows:
        if row.offset_ms is None or not isinstance(hosts, dict):
            continue
        entry = hosts.get(row.host)
        if isinstance(entry, dict):
            entry["clock_offset_ms"] = round(row.offset_ms, 3)
            done.append(row.host)
    if not done:
        return done
    out = io.StringIO()
    yaml.dump(doc, out)
    load_inventory_text(out.getvalue(), str(path))  # what is written still loads
    # a random temporary name, never through a link: a predictable one (the pid) could be
    # planted beforehand as a link to another file, written through, then renamed over
    write_text_atomic(path, out.getvalue())
    return done
