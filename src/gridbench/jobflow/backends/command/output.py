"""What a client program said: its output decoded, the stream an operation reads, and
the short reason quoted when it failed (the command backend's reading of a call)."""

from __future__ import annotations

from gridbench.jobflow.backends.command.options import OpConfig
from gridbench.jobflow.backends.command.parse import snippet
from gridbench.jobflow.backends.command.process import CallResult


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_stream(res: CallResult, op: OpConfig) -> str:
    """The output the operation's ``stream`` names (stdout, stderr or both)."""
    if op.stream == "stderr":
        return decode(res.stderr)
    if op.stream == "both":
        return decode(res.stdout) + "\n" + decode(res.stderr)
    return decode(res.stdout)


def unknown_text(res: CallResult) -> str:
    """What ``unknown_pattern`` is matched against (by the backend's matcher:
    :mod:`.matching`): a failed status call's stderr, then its stdout."""
    return decode(res.stderr) + "\n" + decode(res.stdout)


def failure_reason(res: CallResult) -> str:
    """The start of what a failed call printed: stderr, else stdout."""
    return snippet(decode(res.stderr) or decode(res.stdout))


def exit_reason(res: CallResult) -> str:
    """``<program> exited with <code>: <what it printed>``, for a call outside ok_codes."""
    return f"{res.argv[0]} exited with {res.exit_code}: {failure_reason(res)}"
