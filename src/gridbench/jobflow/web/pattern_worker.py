"""Tries a command-backend pattern on sample output in a child process.

A user's regex can backtrack catastrophically (``^(a+)+$`` on ``aaaa…!``); in the server's
process that would hold the GIL and stall the event loop that times live runs. Here it
runs in ``python -m gridbench.jobflow.web.pattern_worker`` under a timeout instead: the request
is one JSON document on stdin, the answer one on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from gridbench.errors import GridbenchError, SpecError
from gridbench.jobflow.backends.command.options import compile_options
from gridbench.jobflow.backends.command.parse import NoMatch, extract_id, parse_many, parse_one


def apply(backend: dict[str, Any], op: str, sample: str) -> list[tuple[str, str]]:
    """(job id, state or message) pairs as the backend would parse ``sample``."""
    cfg = compile_options(dict(backend.get("options") or {}))
    opc = cfg.ops.get(op)
    if opc is None or opc.pattern is None:
        raise SpecError(f"the {op} operation has no pattern", where=f"backend.options.{op}")
    try:
        if op == "submit":
            return [(extract_id(opc.pattern, sample), "submitted")]
        if opc.mode in ("batch", "all"):
            found = parse_many(opc.pattern, sample, cfg.states, scope=opc.scope, ignore=opc.ignore)
            return [(jid, f"{st.state.value} ({st.message})") for jid, st in found.items()]
        st = parse_one(opc.pattern, sample, cfg.states)
        return [("(this job)", f"{st.state.value} ({st.message})")]
    except NoMatch:
        raise SpecError(
            f"the {op} pattern matches nothing in the sample",
            where=f"backend.options.{op}.pattern",
            fix="adjust the regex (named groups: id, state, exit_code, message)",
        ) from None


def main() -> int:
    req = json.loads(sys.stdin.read())
    try:
        out: dict[str, Any] = {"rows": apply(req["backend"], req["op"], req["sample"])}
    except GridbenchError as exc:
        out = {"error": {"message": exc.message, "where": exc.where, "fix": exc.fix}}
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
