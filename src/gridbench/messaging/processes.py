"""The process book: what a net run started, written down before or as it exists, so that
``gridbench cleanup`` can undo a run that was killed (``kill -9``) without touching
anything it did not start.

``RUN/processes.jsonl``: one line per child process, with its psutil create time (a pid
alone can be recycled). ``RUN/resources.jsonl``: one line per network namespace, veth
link or qdisc, written *before* it is created so a crash half-way still finds it. Both are
read back by :mod:`gridbench.messaging.cleanup` as untrusted input.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Final, Literal

import psutil

from gridbench.store.records import append_record

PROCESSES_FILE: Final = "processes.jsonl"
RESOURCES_FILE: Final = "resources.jsonl"

ResourceKind = Literal["netns", "link", "qdisc", "toxiproxy"]

#: The only names gridbench gives its namespaces and links (``gbn-`` + 8 hex digits, and
#: ``h``/``p`` for the host and peer ends of a veth pair: at most 13 characters, within
#: the kernel's 15). Cleanup removes nothing whose name does not match.
NAME_PATTERN: Final = re.compile(r"^gbn-[0-9a-f]{8}[hp]?$")
#: The names of the proxies the remote environment opens on a host's latency path, and
#: the only Toxiproxy APIs cleanup calls (a plain http://ADDRESS:PORT).
PROXY_PATTERN: Final = re.compile(r"^gridbench-[0-9a-f]{8}-[0-9]{1,5}$")
PROXY_API_PATTERN: Final = re.compile(r"^http://[0-9A-Za-z.\[\]:-]{1,260}:[0-9]{1,5}$")


class ProcessBook:
    """Appends, fsynced, what a run starts to its run directory."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.processes_file = run_dir / PROCESSES_FILE
        self.resources_file = run_dir / RESOURCES_FILE

    def register(self, proc: subprocess.Popen[bytes], role: str) -> None:
        """Record a started child: pid, create time, argv[0], role and run id."""
        try:
            created: float | None = psutil.Process(proc.pid).create_time()
        except psutil.Error:
            # already gone (it failed at once): nothing for cleanup to verify or stop
            created = None
        args = proc.args
        argv0 = str(args[0]) if isinstance(args, list | tuple) and args else str(args)
        append_record(
            self.processes_file,
            {
                "pid": proc.pid,
                "create_time": created,
                "argv0": argv0,
                "role": role,
                "run": self.run_dir.name,
            },
        )

    def resource(self, kind: ResourceKind, name: str, **extra: str) -> None:
        """Record a namespace, link or qdisc about to be created (call before creating)."""
        append_record(
            self.resources_file, {"kind": kind, "name": name, "run": self.run_dir.name, **extra}
        )
