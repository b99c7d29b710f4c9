"""The command backend's patterns matched off the event loop, each match with a deadline.

A backend's patterns are the user's regexes, and a regex can backtrack catastrophically
(``^(a+)+$`` on ``aaaa…!``). Matched in the process that runs the trial, it holds the GIL:
the event loop that times submissions and status polls stalls, and in the dashboard every
page and Abort froze (for about 20 s, in the reported case). So every match of a run is
made in one child process per backend (``python -m gridbench.jobflow.backends.command.
matching``; the patterns compiled there once, a JSON line per request and per answer), and
an answer that has not come within :data:`MATCH_TIMEOUT_S` kills the child: that call is
one :class:`BackendError` naming the pattern, and the next call starts a new child.
``/presets/edit`` tries a pattern the same way (:mod:`gridbench.jobflow.web.pattern_worker`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import JobState, JobStatus
from gridbench.jobflow.backends.command.options import CommandConfig, OpConfig
from gridbench.jobflow.backends.command.parse import (
    NoMatch,
    extract_id,
    key_of,
    parse_many,
    parse_one,
)

#: how long one match may take (a real client's output is matched in milliseconds)
MATCH_TIMEOUT_S = 5.0
#: the longest answer line read from the child (a status listing of many jobs)
_LINE_LIMIT = 256 * 1024 * 1024

_PATTERNS = ("pattern", "ignore", "unknown", "id_key")


def _op_patterns(op: OpConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"scope": op.scope}
    for name in _PATTERNS:
        p: re.Pattern[str] | None = getattr(op, name)
        out[name] = None if p is None else [p.pattern, p.flags]
    return out


class PatternMatcher:
    """The patterns of one backend configuration, matched in a child process."""

    def __init__(self, cfg: CommandConfig, where: str) -> None:
        self.where = where
        self._setup = json.dumps(
            {
                "ops": {n: _op_patterns(op) for n, op in cfg.ops.items()},
                "states": {k: v.value for k, v in cfg.states.items()},
            }
        )
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def _child(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", __name__,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                limit=_LINE_LIMIT,
            )  # fmt: skip
            assert self._proc.stdin is not None
            self._proc.stdin.write(self._setup.encode() + b"\n")
        return self._proc

    async def _ask(self, op: str, request: dict[str, Any]) -> Any:
        text = str(request.get("text", ""))
        async with self._lock:
            proc = await self._child()
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps({"op": op, **request}).encode() + b"\n")
            try:
                await proc.stdin.drain()
                line = await asyncio.wait_for(proc.stdout.readline(), MATCH_TIMEOUT_S)
            except TimeoutError:
                await self._kill()
                raise BackendError(
                    f"the {op} pattern took longer than {MATCH_TIMEOUT_S:g} s on the client's "
                    f"output ({len(text)} characters) and was stopped",
                    where=f"{self.where}, template {op}",
                    fix="the regex backtracks catastrophically: avoid nested repeats such "
                    "as (a+)+ and anchor it (try it on /presets/edit)",
                ) from None
            except (ConnectionError, asyncio.IncompleteReadError):
                line = b""
        if not line:
            await self._kill()
            raise BackendError(
                f"matching the {op} pattern failed (the matcher process ended)",
                where=f"{self.where}, template {op}",
                fix="check the pattern; the run's log may say more",
            )
        answer = json.loads(line)
        if "nomatch" in answer:
            raise NoMatch(re.compile(answer["pattern"]), text)
        return answer["ok"]

    async def extract_id(self, op: OpConfig, text: str) -> str:
        """:func:`.parse.extract_id` (NoMatch as there)."""
        return str(await self._ask(op.name, {"fn": "id", "text": text}))

    async def parse_one(self, op: OpConfig, text: str) -> JobStatus:
        """:func:`.parse.parse_one` with the configuration's state map."""
        return _status(await self._ask(op.name, {"fn": "one", "text": text}))

    async def parse_many(self, op: OpConfig, text: str) -> dict[str, tuple[str, JobStatus]]:
        """:func:`.parse.parse_many`, each job's status with its key (``id_key``)."""
        found = await self._ask(op.name, {"fn": "many", "text": text})
        return {jid: (key, _status(st)) for jid, key, st in found}

    async def keys(self, op: OpConfig, ids: Sequence[str]) -> list[str]:
        """:func:`.parse.key_of` of every id."""
        if op.id_key is None:
            return list(ids)
        return [str(k) for k in await self._ask(op.name, {"fn": "keys", "ids": list(ids)})]

    async def count_lines(self, op: OpConfig, text: str) -> int:
        """The non-blank lines of ``text`` the pattern finds something in (all of them
        without a pattern): a queue's length."""
        if op.pattern is None:
            return sum(1 for ln in text.splitlines() if ln.strip())
        return int(await self._ask(op.name, {"fn": "count", "text": text}))

    async def says_unknown(self, op: OpConfig, text: str) -> bool:
        """Whether ``unknown_pattern`` finds anything in ``text``."""
        if op.unknown is None:
            return False
        return bool(await self._ask(op.name, {"fn": "unknown", "text": text}))

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def close(self) -> None:
        """End the child (its stdin closed: it exits at once)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        assert proc.stdin is not None
        with contextlib.suppress(ConnectionError):
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2.0)
        except TimeoutError:  # busy in a match that will not end
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


def _status(data: list[Any]) -> JobStatus:
    state, message, code = data
    return JobStatus(JobState(state), str(message), code if isinstance(code, int) else None)


def _plain(st: JobStatus) -> list[Any]:
    return [st.state.value, st.message, st.exit_code]


# -- the child ------------------------------------------------------------------------------
def _compiled(spec: list[Any] | None) -> re.Pattern[str] | None:
    return None if spec is None else re.compile(spec[0], spec[1])


def _answer(ops: dict[str, Any], states: dict[str, JobState], req: dict[str, Any]) -> Any:
    op = ops[req["op"]]
    fn = req["fn"]
    pattern: re.Pattern[str] | None = op["pattern"]
    text = str(req.get("text", ""))
    if fn == "keys":
        return [key_of(op["id_key"], i) for i in req["ids"]]
    if fn == "unknown":
        return op["unknown"] is not None and op["unknown"].search(text) is not None
    assert pattern is not None
    if fn == "count":
        return sum(1 for ln in text.splitlines() if ln.strip() and pattern.search(ln))
    if fn == "id":
        return extract_id(pattern, text)
    if fn == "one":
        return _plain(parse_one(pattern, text, states))
    found = parse_many(pattern, text, states, scope=op["scope"], ignore=op["ignore"])
    return [[jid, key_of(op["id_key"], jid), _plain(st)] for jid, st in found.items()]


def main() -> int:
    """Answer match requests on stdin (the first line: the patterns and the state map)."""
    setup = json.loads(sys.stdin.readline())
    ops = {
        name: {k: (_compiled(v) if k in _PATTERNS else v) for k, v in op.items()}
        for name, op in setup["ops"].items()
    }
    states = {k: JobState(v) for k, v in setup["states"].items()}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            out: dict[str, Any] = {"ok": _answer(ops, states, req)}
        except NoMatch as exc:
            out = {"nomatch": True, "pattern": exc.pattern.pattern}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
