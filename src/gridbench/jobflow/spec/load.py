"""Loading a job-flow experiment spec: the generic YAML machinery of
:mod:`gridbench.specload` (line marks, ``--set`` overrides, errors naming file, line, field
and fix) validated against :class:`~gridbench.jobflow.spec.model.ExperimentSpec`, and the sweep
keys checked against the load models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.errors import SpecError
from gridbench.jobflow import loads as load_models
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.specload import (
    SpecProblem,
    SpecWords,
    other_family,
    own_kind,
    parse_with_overrides,
    problem_error,
    read_spec_text,
    validate_spec,
)

#: job flow's family name: a spec may say ``kind: jobflow``
KIND = "jobflow"


def sweep_path(key: str) -> list[str]:
    """Map a sweep key to its spec path: ``rate`` -> load.rate, ``job.runtime`` as is."""
    if "." in key:
        return key.split(".")
    if key in load_models.field_names():  # a field of any load model
        return ["load", key]
    raise SpecError(
        f"sweep key {key!r} is not a load parameter",
        where=f"sweep.{key}",
        fix="use a load field (rate, users, jobs_per_user, ...) or a dotted path like job.runtime",
    )


def validate_data(
    data: Any, root: Any, origin: str, overridden: list[tuple[str, ...]] | None = None
) -> ExperimentSpec:
    data = own_kind(data, KIND, origin)
    try:
        words = SpecWords(keys="name:, backend:, load:, ...")
        spec = validate_spec(ExperimentSpec, data, root, origin, overridden, words)
    except SpecError:
        other = other_family(data, KIND, "a job-flow spec", origin)
        if other is None:
            raise
        raise other from None
    for key in spec.sweep:
        sweep_path(key)
    return spec


def load_spec(
    path: str | Path, overrides: list[str] | None = None
) -> tuple[ExperimentSpec, dict[str, Any]]:
    """Load, override and validate a spec. Returns the model and the plain data as run."""
    origin = str(path)
    text = read_spec_text(path)
    return load_spec_text(text, origin, overrides, check_hosts=True)


def load_spec_text(
    text: str,
    origin: str = "<spec>",
    overrides: list[str] | None = None,
    *,
    check_hosts: bool = False,
) -> tuple[ExperimentSpec, dict[str, Any]]:
    """Parse, override and validate spec text; ``check_hosts``: the agents' inventory
    names too (a spec file given to a command; not a finished run's spec, whose
    inventory may be gone)."""
    root, data, overridden = parse_with_overrides(text, origin, overrides)
    spec = validate_data(data, root, origin, overridden)
    if check_hosts:
        _check_agent_hosts(spec, root, origin, overridden)
    return spec, own_kind(data, KIND, origin)


def _check_agent_hosts(
    spec: ExperimentSpec, root: Any, origin: str, overridden: list[tuple[str, ...]]
) -> None:
    """``load.agents.hosts`` named from an inventory: each name is there (else one error
    at its line, with a did-you-mean), before anything starts (docs/hosts.md)."""
    block = spec.load.remote_agents
    if block is None or block.inventory is None or not block.hosts:
        return
    from gridbench.hosts.inventory import load_inventory, shared_access

    inv = load_inventory(block.inventory)
    for i, name in enumerate(block.hosts):
        if name not in inv.hosts:
            try:
                inv.host(name, "load.agents.hosts")
            except SpecError as exc:
                problem = SpecProblem(("load", "agents", "hosts", i), exc.message, exc.fix or "")
                raise problem_error(problem, root, origin, overridden) from None
    shared_access(inv, list(block.hosts), f"{origin}: load.agents.hosts")
