"""The resilience load's writers on a client host (docs/io.md, "Resilience ... from client
hosts"): run there by the controller (:mod:`gridbench.io.resilience_hosts`) as

    python -m gridbench.io.host_writers --dir DIR --writers N --file-size B --max-bytes B
        --prefix HOST-

It prints ``READY`` once DIR is there, waits for ``go`` on stdin, then its writers write new
files of random bytes into DIR exactly as the controller's own do
(:class:`gridbench.io.resilience.Writers`: each file written, fsynced, closed, its sha256
taken from the bytes in memory), and print one JSON line per file (and ``cap``) on stdout,
times in seconds since ``go``. A ``stop`` line, or stdin's end (the controller gone, even
by kill -9), stops them; it prints ``{"event": "done", "stuck": [...]}`` and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gridbench.io.resilience import Writers
from gridbench.io.resilience_model import ResilienceSpec

#: exit status when DIR is not there (the target is not mounted at that path on this host)
NO_DIR = 3


def main(argv: list[str] | None = None) -> int:
    """Write until told to stop (the module's text)."""
    ap = argparse.ArgumentParser(prog="python -m gridbench.io.host_writers", description=__doc__)
    ap.add_argument("--dir", required=True, type=Path, help="the work folder, on the target")
    ap.add_argument("--writers", required=True, type=int)
    ap.add_argument("--file-size", required=True, type=int)
    ap.add_argument("--max-bytes", required=True, type=int, help="this host's share")
    ap.add_argument("--prefix", default="", help="the start of every file's name")
    ap.add_argument("--join-timeout", type=float, default=120.0)
    a = ap.parse_args(argv)
    if not a.dir.is_dir():
        print(f"{a.dir} is not a folder on this host: the target is not mounted here at the "
              "same path", file=sys.stderr)  # fmt: skip
        return NO_DIR
    lock = threading.Lock()

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps(rec) + "\n"
        with lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    spec = ResilienceSpec(
        target="host", writers=a.writers, file_size=a.file_size, max_bytes=a.max_bytes
    )
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 0  # the controller went away before the load
    t0 = time.monotonic()
    writers = Writers(spec, a.dir, emit, lambda: time.monotonic() - t0, prefix=a.prefix)
    writers.start()
    sys.stdin.readline()  # "stop", or the end of stdin
    stuck = writers.join(a.join_timeout)
    emit({"event": "done", "t": time.monotonic() - t0, "stuck": stuck})
    sys.stdout.flush()
    os._exit(0)  # a writer still blocked in a write on a hung server must not hold the exit


if __name__ == "__main__":
    sys.exit(main())
