"""A child's lifeline: the servers and peers gridbench starts end when their stdin closes.

The parent holds the write end of the child's stdin; when the parent dies (even by
SIGKILL) the pipe closes and the child stops instead of lingering.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable


def _wait_for_eof(fd: int) -> None:
    # os.read on the descriptor, not sys.stdin.buffer: a daemon thread blocked inside the
    # buffered reader holds its lock, and the interpreter aborts (SIGABRT, "could not
    # acquire lock ... at interpreter shutdown") when it finalizes while the thread waits
    with contextlib.suppress(OSError, ValueError):
        while os.read(fd, 4096):
            pass


def on_stdin_eof(then: Callable[[], object], name: str = "stdin-eof") -> threading.Thread:
    """Call ``then`` (from a daemon thread) once stdin reaches end of file."""

    def watch() -> None:
        _wait_for_eof(sys.stdin.fileno())
        then()

    thread = threading.Thread(target=watch, name=name, daemon=True)
    thread.start()
    return thread
