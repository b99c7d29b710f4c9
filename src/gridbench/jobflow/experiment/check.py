"""``gridbench check``: does the backend answer, and does one tiny job run end to end?

EBench's "test connectivity" button, as steps that each say what failed and the fix.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import time
from dataclasses import dataclass
from pathlib import Path

from gridbench.errors import GridbenchError, SpecError
from gridbench.jobflow import loads as load_models
from gridbench.jobflow.backends.base import (
    STAGING_FIELDS,
    Backend,
    DataStager,
    JobRequest,
    JobSizer,
    JobState,
)
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.run.collectors import build_collectors
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.jobflow.spec.threshold_paths import threshold_problem


@dataclass
class Step:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    seconds: float = 0.0


async def _job_round_trip(backend: Backend, spec: ExperimentSpec, timeout_s: float) -> Step:
    t0 = time.perf_counter()
    job = spec.job
    req = JobRequest(
        "gridbench-check",
        tuple(job.command),
        job.runtime or 0.0,
        tasks=job.tasks,
        nodes=job.nodes,
    )
    try:
        bid = await asyncio.wait_for(backend.submit(req), spec.timeouts.submit)
    except Exception as exc:
        return Step(
            "submit one job",
            False,
            f"{type(exc).__name__}: {exc}",
            "check the job section and the submit command/credentials",
        )
    deadline = time.perf_counter() + timeout_s
    state = JobState.UNKNOWN
    while time.perf_counter() < deadline:
        st = (await backend.status([bid])).get(bid)
        state = st.state if st else JobState.UNKNOWN
        if state.terminal:
            break
        await asyncio.sleep(min(spec.timeouts.status_interval, 1.0))
    took = time.perf_counter() - t0
    if state is JobState.DONE:
        return Step("submit one job", True, f"job {bid} done in {took:.2f}s", seconds=took)
    if not state.terminal:
        await backend.cancel([bid])
        return Step(
            "submit one job",
            False,
            f"job {bid} still {state.value} after {timeout_s:g}s (cancelled)",
            "is the queue full or the job stuck? raise --timeout",
            took,
        )
    return Step(
        "submit one job",
        False,
        f"job {bid} ended {state.value}",
        "check job.command and the backend's log",
        took,
    )


def check_config(specs: list[ExperimentSpec], *, host: bool = True) -> None:
    """Offline checks of every point's backend options and collectors (nothing connects),
    and with ``host`` of what this machine must provide: the users' accounts and
    credentials (``validate`` and ``plan`` skip those, so a spec can be checked anywhere).

    Raises the SpecError of the first problem, so ``validate`` and ``plan`` catch what
    ``run`` would otherwise only find after creating a results directory.
    """
    check_threshold_points(specs)
    for spec in specs:
        backend = create_backend(spec.backend.type, spec.backend.options)
        build_collectors(spec, backend)
        load_models.get(spec.load.model).check_backend(spec, backend)  # e.g. bulk: arrays
        check_job_size(spec, backend)
        check_thresholds(spec, backend)
        if host:
            check_users(spec)
        check_sampling(spec, host=host)


def check_sampling(spec: ExperimentSpec, *, host: bool = True) -> None:
    """The ``sampling:`` block's hosts, each in its inventory (a typo: one SpecError with a
    "did you mean"); without ``host`` only when the inventory file is here to read."""
    if spec.sampling is None:
        return
    from gridbench.hosts.sampling.spec import load_targets

    inv = spec.sampling.inventory
    if host or inv is None or Path(inv).is_file():
        load_targets(spec.sampling)


def check_threshold_points(specs: list[ExperimentSpec]) -> None:
    """A threshold's point index names one of the sweep's points (``specs``, one each)."""
    for i, th in enumerate(specs[0].thresholds if specs else []):
        if isinstance(th.point, int) and not 0 <= th.point < len(specs):
            raise SpecError(
                f"no point with index {th.point} (the sweep has {len(specs)}: 0 to "
                f"{len(specs) - 1})",
                where=f"thresholds.{i}.point",
                fix="give a point index from 'gridbench plan', or 'all' or 'any'",
            )


#: what a spec does to get a staging field honoured (docs/backends.md, Data staging)
STAGING_BACKENDS = (
    "reference (a grid with ce.stage_in for inputs, bridge.stage_out for outputs), command "
    "(an upload template for inputs, a download template for outputs, or {input_size} ... "
    "in its templates)"
)


def config_warnings(specs: list[ExperimentSpec]) -> list[str]:
    """What every point's configuration would silently ignore (nothing connects), each
    once, as 'where: what (fix: ...)': staging fields a backend does not move."""
    out: list[str] = []
    for spec in specs:
        backend = create_backend(spec.backend.type, spec.backend.options)
        out += staging_warnings(spec, backend)
    return list(dict.fromkeys(out))


def staging_warnings(spec: ExperimentSpec, backend: Backend) -> list[str]:
    """One warning per ``job`` staging field set that the backend, as configured, does not
    move (:class:`DataStager`): the sweep over it would measure nothing."""
    staged = backend.staged_fields() if isinstance(backend, DataStager) else frozenset()
    kind = spec.backend.type
    out = []
    for f in STAGING_FIELDS:
        if getattr(spec.job, f) is None or f in staged:
            continue
        why = (
            f"the {kind} backend as configured does not move it"
            if isinstance(backend, DataStager)
            else f"the {kind} backend does not stage data"
        )
        out.append(
            f"job.{f}: {why}, so it is ignored and no transfer is timed (fix: drop job.{f}, "
            f"or use a backend that stages: {STAGING_BACKENDS}; docs/backends.md, Data staging)"
        )
    return out


def check_thresholds(spec: ExperimentSpec, backend: Backend) -> None:
    """Every threshold names a figure this run can have (the metrics schema and the
    backend's stages and segments): a misspelling is refused before anything runs."""
    chain = backend.stage_chain()
    for i, th in enumerate(spec.thresholds):
        problem = threshold_problem(th.metric, chain)
        if problem is None:
            continue
        message, instead = problem
        raise SpecError(
            f"threshold metric {th.metric!r}: {message}",
            where=f"thresholds.{i}.metric",
            fix=(f"did you mean {instead!r}? " if instead else "")
            + "the paths are listed in docs/metrics.md (Thresholds)",
        )


def check_job_size(spec: ExperimentSpec, backend: Backend) -> None:
    """``job.tasks`` / ``job.nodes`` need a backend that honours them (the ``JobSizer``
    hook), and one that does may still refuse a size its configuration cannot run."""
    tasks, nodes = spec.job.tasks, spec.job.nodes
    if tasks is None and nodes is None:
        return
    where = "job.tasks" if tasks is not None else "job.nodes"
    if not isinstance(backend, JobSizer):
        raise SpecError(
            f"the {spec.backend.type} backend cannot size a job: it has no processes or "
            "nodes to give it",
            where=where,
            fix="drop job.tasks and job.nodes, or use a backend that honours them "
            "(slurm, psij, command with {tasks}/{nodes} in its templates; docs/backends.md)",
        )
    problem = backend.job_size_problem(tasks, nodes)
    if problem is not None:
        raise SpecError(
            problem,
            where=where,
            fix="change job.tasks / job.nodes, or the backend options (docs/backends.md)",
        )


def check_users(spec: ExperimentSpec) -> None:
    """Accounts exist (and gridbench may switch to them); credentials are where named."""
    for i, u in enumerate(spec.users):
        where = f"users.{i}"
        if u.account is not None:
            try:
                pwd.getpwnam(u.account)
            except KeyError:
                raise SpecError(
                    f"there is no Unix user {u.account!r} on this host",
                    where=f"{where}.account",
                    fix="create the account, or drop account to submit as yourself",
                ) from None
            if os.geteuid() != 0:
                raise SpecError(
                    f"submitting as {u.account!r} needs gridbench to run as root",
                    where=f"{where}.account",
                    fix="run as root, or drop account (jobs are then submitted as you)",
                )
        cred = u.credential
        if cred is not None and cred.file is not None and not os.access(cred.file, os.R_OK):
            raise SpecError(
                f"the credential file of {u.name} cannot be read",
                where=f"{where}.credential.file",
                fix="give a readable file holding the token or proxy",
            )
        if cred is not None and cred.env is not None and not os.environ.get(cred.env):
            raise SpecError(
                f"the credential variable {cred.env} of {u.name} is not set",
                where=f"{where}.credential.env",
                fix=f"export {cred.env} before running",
            )


async def check(spec: ExperimentSpec, *, job_timeout_s: float = 60.0) -> list[Step]:
    """Run the connectivity steps; stop at the first one that fails."""
    steps: list[Step] = []
    try:
        backend = create_backend(spec.backend.type, spec.backend.options)
    except GridbenchError as exc:
        return [Step("backend options", False, exc.message, exc.fix or "")]
    steps.append(Step("backend options", True, f"{spec.backend.type}: options valid"))
    if spec.users:
        try:
            check_users(spec)
        except SpecError as exc:
            steps.append(Step("users", False, f"{exc.where}: {exc.message}", exc.fix or ""))
            return steps
        steps.append(Step("users", True, f"{len(spec.users)} accounts and credentials found"))
    t0 = time.perf_counter()
    try:
        await backend.open()
    except GridbenchError as exc:
        steps.append(Step("connect", False, str(exc.message), exc.fix or ""))
        return steps
    except Exception as exc:
        steps.append(
            Step("connect", False, f"{type(exc).__name__}: {exc}", "check the backend options")
        )
        return steps
    try:
        steps.append(
            Step(
                "connect",
                True,
                f"backend answered; stages: {' -> '.join(backend.stage_chain().names())}",
                seconds=time.perf_counter() - t0,
            )
        )
        steps.append(await _job_round_trip(backend, spec, job_timeout_s))
        if steps[-1].ok and spec.collectors:
            steps.append(await _collectors(spec, backend))
    finally:
        await backend.close()
    return steps


async def _collectors(spec: ExperimentSpec, backend: Backend) -> Step:
    try:
        cols = build_collectors(spec, backend)
        for c in cols:
            poll = getattr(c, "probe", None)
            if poll is not None:
                await poll()
    except GridbenchError as exc:
        return Step("collectors", False, exc.message, exc.fix or "check collectors[].reports")
    except Exception as exc:
        return Step("collectors", False, str(exc), "check collectors[].reports URLs")
    return Step("collectors", True, ", ".join(c.describe() for c in cols))
