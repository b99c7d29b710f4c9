"""The command backend's job states: the ``status`` template (one call for many ids, in
chunks, or one per job), then ``finished`` (or ``status.missing``) for the ids the status
listing no longer shows."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import JobStatus
from gridbench.jobflow.backends.command.calls import TemplateCalls
from gridbench.jobflow.backends.command.options import OpConfig
from gridbench.jobflow.backends.command.output import exit_reason, read_stream, says_unknown
from gridbench.jobflow.backends.command.parse import NoMatch, key_of, parse_many, parse_one
from gridbench.jobflow.backends.command.process import ClientStartError, ClientTimeout


async def read_states(calls: TemplateCalls, ids: Sequence[str]) -> dict[str, JobStatus]:
    """The states of ``ids`` the clients report (an id they say nothing about is left out)."""
    if not ids:
        return {}
    op = calls.cfg.ops["status"]
    if op.mode == "single":
        return await _per_job(calls, op, ids)
    wanted = {key_of(op.id_key, i): i for i in ids}
    found: dict[str, JobStatus] = {}
    chunks = (
        [list(ids[k : k + op.chunk]) for k in range(0, len(ids), op.chunk)]
        if op.mode == "batch"
        else [[]]
    )
    for chunk in chunks:
        res = await calls.checked(op, calls.argv(op, {}, {"ids": chunk}), None)
        gone = False
        if res.exit_code not in op.ok_codes:
            if not says_unknown(op, res):
                raise calls.exit_error(op, res)
            gone = True  # the client says (some of) these ids are unknown
        try:
            parsed = parse_many(
                op.pattern,  # type: ignore[arg-type]
                read_stream(res, op),
                calls.cfg.states,
                scope=op.scope,
                ignore=op.ignore,
            )
        except NoMatch as exc:
            if gone:
                continue
            raise BackendError(
                f"status template ({res.argv[0]}): {exc}",
                where=calls.where("status"),
                fix="adjust status.pattern (named groups id and state), or skip header "
                "lines with status.ignore",
            ) from None
        for jid, st in parsed.items():
            i = wanted.get(key_of(op.id_key, jid))
            if i is not None:
                found[i] = st
    missing = [i for i in ids if i not in found]
    if missing:
        found.update(await _missing(calls, op, missing))
    return found


async def _per_job(calls: TemplateCalls, op: OpConfig, ids: Sequence[str]) -> dict[str, JobStatus]:
    sem = asyncio.Semaphore(op.parallel)
    assert op.pattern is not None
    pattern = op.pattern

    async def one(i: str) -> tuple[str, JobStatus | str | None]:
        """(id, status | error text | None when the client says it is unknown)."""
        async with sem:
            try:
                res = await calls.run(op, calls.argv(op, calls.job_values(i)), None)
            except (ClientStartError, ClientTimeout) as exc:
                return i, str(exc)
        if res.exit_code not in op.ok_codes:
            if says_unknown(op, res):
                return i, None
            return i, exit_reason(res)
        try:
            return i, parse_one(pattern, read_stream(res, op), calls.cfg.states)
        except NoMatch as exc:
            return i, f"status template ({res.argv[0]}): {exc}"

    found: dict[str, JobStatus] = {}
    gone: list[str] = []
    errors: list[tuple[str, str]] = []
    for i, r in await asyncio.gather(*(one(i) for i in ids)):
        if isinstance(r, JobStatus):
            found[i] = r
        elif r is None:
            gone.append(i)
        else:
            errors.append((i, r))
    if errors and not found and not gone:
        raise BackendError(
            f"all {len(ids)} status calls failed; first: {errors[0][1]}",
            where=calls.where("status"),
            fix="check status.argv and status.pattern (group 'state' or the whole match)",
        )
    if gone:
        found.update(await _missing(calls, op, gone))
    return found


async def _missing(calls: TemplateCalls, op: OpConfig, ids: list[str]) -> dict[str, JobStatus]:
    """States of ids the status call no longer lists: ask ``finished``, or ``missing``."""
    fin = calls.cfg.ops.get("finished")
    if fin is None:
        if op.missing is None:
            return {}
        return {i: JobStatus(op.missing, "no longer listed by the status command") for i in ids}
    assert fin.pattern is not None
    pattern = fin.pattern
    sem = asyncio.Semaphore(fin.parallel)

    async def one(i: str) -> tuple[str, JobStatus | None]:
        async with sem:
            try:
                res = await calls.run(fin, calls.argv(fin, calls.job_values(i)), None)
            except (ClientStartError, ClientTimeout):
                return i, None
        if res.exit_code not in fin.ok_codes:
            return i, None  # e.g. the accounting record is not written yet: ask again
        try:
            return i, parse_one(pattern, read_stream(res, fin), calls.cfg.states)
        except NoMatch:
            return i, None

    return {i: st for i, st in await asyncio.gather(*(one(i) for i in ids)) if st is not None}
