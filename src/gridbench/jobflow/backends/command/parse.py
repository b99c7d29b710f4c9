"""Reading client output: job ids, per-job states and the native -> gridbench state map.

Patterns pick values by named group (``id``, ``state``, optionally ``exit_code`` and
``message``), else by their first group, else by the whole match. A native state not in
the map becomes ``unknown`` with the raw value kept in the message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gridbench.jobflow.backends.base import JobState, JobStatus


class NoMatch(Exception):
    """A pattern matched nothing in output that was not empty."""

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        super().__init__(f"pattern {pattern.pattern!r} did not match the output {snippet(text)}")
        self.pattern = pattern
        self.text = text


def snippet(text: str, limit: int = 300) -> str:
    """A short, quoted excerpt of client output for an error message."""
    t = text.strip()
    if not t:
        return "(empty output)"
    if len(t) > limit:
        return repr(t[:limit]) + f" … ({len(t)} characters)"
    return repr(t)


def pick(m: re.Match[str], group: str) -> str:
    """A named group if the pattern has it, else group 1, else the whole match."""
    if group in m.re.groupindex:
        return (m.group(group) or "").strip()
    if m.re.groups:
        return (m.group(1) or "").strip()
    return m.group(0).strip()


def extract_id(pattern: re.Pattern[str], text: str) -> str:
    """The job id a submit printed; raise NoMatch if the pattern finds none."""
    m = pattern.search(text)
    if m is None or not pick(m, "id") or "\x00" in pick(m, "id"):
        raise NoMatch(pattern, text)  # (an id with a NUL byte could never be an argument)
    return pick(m, "id")


def map_state(
    native: str, states: Mapping[str, JobState], exit_code: int | None = None, message: str = ""
) -> JobStatus:
    """The gridbench state of a native one (exact, then case-insensitive lookup).

    A job mapped to ``done`` with a non-zero ``exit_code`` is ``failed``.
    """
    state = states.get(native)
    if state is None:
        folded = native.casefold()
        state = next((v for k, v in states.items() if k.casefold() == folded), None)
    if state is None:
        note = f"native state {native!r} is not in the state map"
        return JobStatus(JobState.UNKNOWN, f"{note}; {message}" if message else note, exit_code)
    if state is JobState.DONE and exit_code not in (None, 0):
        state = JobState.FAILED
    if not message:
        message = native if exit_code in (None, 0) else f"{native}, exit code {exit_code}"
    return JobStatus(state, message, exit_code)


def _exit_code(m: re.Match[str]) -> int | None:
    if "exit_code" not in m.re.groupindex or m.group("exit_code") is None:
        return None
    try:
        return int(m.group("exit_code"))
    except ValueError:
        return None


def _message(m: re.Match[str]) -> str:
    if "message" in m.re.groupindex and m.group("message"):
        return m.group("message").strip()
    return ""


def status_of(m: re.Match[str], states: Mapping[str, JobState]) -> JobStatus:
    """The JobStatus one match describes (state, and optionally exit_code and message)."""
    return map_state(pick(m, "state"), states, _exit_code(m), _message(m))


def parse_many(
    pattern: re.Pattern[str],
    text: str,
    states: Mapping[str, JobState],
    *,
    scope: str = "line",
    ignore: re.Pattern[str] | None = None,
) -> dict[str, JobStatus]:
    """Per-job states from the output of a call covering many jobs.

    ``scope`` "line" applies the pattern to each line (lines matching ``ignore`` are
    skipped); "output" finds every match in the whole text (records spanning lines).
    Raise NoMatch when non-blank output held no match at all.
    """
    out: dict[str, JobStatus] = {}
    if scope == "output":
        matches = list(pattern.finditer(text))
        seen = bool(text.strip())
    else:
        matches = []
        seen = False
        for line in text.splitlines():
            if not line.strip() or (ignore is not None and ignore.search(line)):
                continue
            seen = True
            m = pattern.search(line)
            if m is not None:
                matches.append(m)
    for m in matches:
        jid = m.group("id").strip() if m.group("id") else ""
        if jid:
            out[jid] = status_of(m, states)
    if seen and not out:
        raise NoMatch(pattern, text)
    return out


def parse_one(pattern: re.Pattern[str], text: str, states: Mapping[str, JobState]) -> JobStatus:
    """The state of one job from its own status output; raise NoMatch if absent."""
    m = pattern.search(text)
    if m is None:
        raise NoMatch(pattern, text)
    if "state" not in pattern.groupindex and "exit_code" in pattern.groupindex:
        code = _exit_code(m)
        if code is None:
            raise NoMatch(pattern, text)
        return JobStatus(JobState.DONE if code == 0 else JobState.FAILED, f"exit code {code}", code)
    return status_of(m, states)


def key_of(id_key: re.Pattern[str] | None, jid: str) -> str:
    """The part of an id used to compare submitted and listed ids (the whole id by default)."""
    if id_key is None:
        return jid
    m = id_key.search(jid)
    return m.group(0) if m else jid
