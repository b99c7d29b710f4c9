"""The job requests of a trial, as the spec's ``job`` and ``users`` describe them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from gridbench.jobflow.backends.base import NO_ENTRIES, JobRequest, Staging
from gridbench.jobflow.events.job_numbers import job_name, job_prefix
from gridbench.jobflow.specbase.model import ExperimentBase, JobSpec
from gridbench.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not pay for it
    np = lazy_module("numpy")


class RequestMaker(Protocol):
    """Job ``i``'s request; ``slot`` pins a sustain virtual user to a declared user."""

    def __call__(self, i: int, slot: int | None = None) -> JobRequest: ...


def request_factory(spec: ExperimentBase, trial_id: str, n_hint: int, seed: int) -> RequestMaker:
    """Job requests of one trial: names, command, the pre-drawn failure flags (sized by
    ``n_hint``, drawn on past it) and users by weight. The controller and its remote agents
    use this one factory, so an agent's job ``i`` is the controller's."""
    job = spec.job
    command = tuple(job.command)
    rng = np.random.default_rng(seed)
    fails: list[bool] | None = None
    if job.fail_fraction > 0:  # a list: indexing it costs no numpy scalar per job
        fails = (rng.random(max(n_hint, 1)) < job.fail_fraction).tolist()
    frac_rng = np.random.default_rng(seed + 1)
    data = job_staging(job)
    runtime, tasks, nodes = job.runtime, job.tasks, job.nodes

    users = spec.users
    order = user_order([u.weight for u in users]) if users else []

    prefix = job_prefix(trial_id)

    def make(i: int, slot: int | None = None) -> JobRequest:
        """Job ``i``; ``slot`` pins a sustain model's virtual user to a declared user (by the
        same weighted order, so weights set the share of virtual users)."""
        if fails is not None:
            fail = fails[i] if i < len(fails) else bool(frac_rng.random() < job.fail_fraction)
        else:
            fail = False
        name = job_name(prefix, i)
        if not users:  # positional: keywords cost the open loop ~0.15 us a job
            return JobRequest(
                name, command, runtime, fail, None, NO_ENTRIES, None, NO_ENTRIES, tasks, nodes, data
            )
        u = users[order[(i if slot is None else slot) % len(order)]]
        cred = u.credential.model_dump(exclude_none=True) if u.credential else {}
        return JobRequest(
            name,
            command,
            runtime,
            fail,
            u.name,
            {"user": u.name},
            u.account,
            cred,
            tasks=tasks,
            nodes=nodes,
            staging=data,
        )

    return make


def user_order(weights: list[float], slots: int = 1000) -> list[int]:
    """A repeating sequence of user indices in proportion to ``weights``, interleaved
    (smooth weighted round robin), so any stretch of jobs is split about evenly."""
    total = sum(weights)
    current = [0.0] * len(weights)
    out = []
    for _ in range(slots):
        current = [c + w for c, w in zip(current, weights, strict=True)]
        k = max(range(len(weights)), key=current.__getitem__)
        current[k] -= total
        out.append(k)
    return out


def job_staging(job: JobSpec) -> Staging | None:
    """The spec's staging sizes, or None when it names none (the default: no staging)."""
    st = Staging(job.input_size, job.input_files, job.output_size, job.output_files)
    return None if st == Staging() else st
