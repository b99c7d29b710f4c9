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
from gridbench.jobflow.backends.command.output import exit_reason, read_stream, unknown_text
from gridbench.jobflow.backends.command.parse import NoMatch
from gridbench.jobflow.backends.command.process import ClientStartError, ClientTimeout


async def read_states(calls: TemplateCalls, ids: Sequence[str]) -> dict[str, JobStatus]:
    """The states of ``ids`` the clients report (an id they say nothing about is left out)."""
    if not ids:
        return {}
    op = calls.cfg.ops["status"]
    if op.mode == "single":
        return await _per_job(calls, op, ids)
    matcher = calls.matcher  # the user's patterns: matched off the event loop
    wanted = dict(zip(await matcher.keys(op, ids), ids, strict=True))
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
            if not await matcher.says_unknown(op, unknown_text(res)):
                raise calls.exit_error(op, res)
            gone = True  # the client says (some of) these ids are unknown
        try:
            parsed = await matcher.parse_many(op, read_stream(res, op))
        except NoMatch as exc:
            if gone:
                continue
            raise BackendError(
                f"status template ({res.argv[0]}): {exc}",
                where=calls.where("status"),
                fix="adjust status.pattern (named groups id and state), or skip header "
                "lines with status.ignore",
            ) from None
        for key, st in parsed.values():
            i = wanted.get(key)
            if i is not None:
                found[i] = st
    missing = [i for i in ids if i not in found]
    if missing:
        found.update(await _missing(calls, op, missing))
    return found


async def _per_job(calls: TemplateCalls, op: OpConfig, ids: Sequence[str]) -> dict[str, JobStatus]:
    sem = asyncio.Semaphore(op.parallel)
    matcher = calls.matcher

    async def one(i: str) -> tuple[str, JobStatus | str | None]:
        """(id, status | error text | None when the client says it is unknown)."""
        async with sem:
            try:
                res = await calls.run(op, calls.argv(op, calls.job_values(i)), None)
            except (ClientStartError, ClientTimeout) as exc:
                return i, str(exc)
        if res.exit_code not in op.ok_codes:
            if await matcher.says_unknown(op, unknown_text(res)):
                return i, None
            return i, exit_reason(res)
        try:
            return i, await matcher.parse_one(op, read_stream(res, op))
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
            return i, await calls.matcher.parse_one(fin, read_stream(res, fin))
        except NoMatch:
            return i, None

    return {i: st for i, st in await asyncio.gather(*(one(i) for i in ids)) if st is not None}
