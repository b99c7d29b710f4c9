"""io's threshold paths checked before anything runs (``validate``, ``plan``, ``run``): a
path is walked through the metrics schema's own entries (:mod:`gridbench.io.metrics_schema`)
keyed as :func:`gridbench.io.analysis.threshold_document` and
:func:`gridbench.io.posix_analysis.threshold_paths` key them, its names checked against
the targets the spec declares and the tests and columns io knows. So
``matrix.cand.write.kbps.meen`` is refused with "did you mean
'matrix.cand.write.kbps.mean'?" instead of failing after the whole run as "not measured"."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, get_args

from gridbench.hosts.sampling.spec import sampling_problem
from gridbench.io.clients_model import ClientTest, clients_problem, hosts_problem
from gridbench.io.metrics_schema import Bonnie, Concurrency, Entry
from gridbench.io.metrics_schema_clients import ClientSeries, HostCompared
from gridbench.io.metrics_schema_posix import ConformanceRow, Replay
from gridbench.io.model import BonnieColumn, ConcurrencyTest, IoSpec, IozoneTest
from gridbench.schema import Count, OpenModel, path_problem
from gridbench.specload import SpecProblem, misspelt_threshold


class ClientsThresholds(OpenModel):
    """``clients.``: the clients phase's figures (gridbench.io.clients_analysis)."""

    series: dict[str, dict[str, dict[str, ClientSeries]]]  # <target>.<test>.<N>
    same_file: dict[str, ClientSeries]  # <target>
    hosts: dict[str, dict[str, dict[str, HostCompared]]]  # <target>.<test>.<host>
    lost: Count


class IoThresholds(OpenModel):
    """The document io's thresholds read (the scopes of io/metrics.py), keyed by name
    (only walked by :func:`gridbench.schema.path_problem`, never built)."""

    matrix: dict[str, dict[str, Entry]]  # <target>.<test>
    bonnie: dict[str, dict[str, Bonnie]]  # <target>.<column>
    concurrency: dict[str, dict[str, dict[str, Concurrency]]]  # <target>.<test>.<clients>
    conformance: dict[str, dict[str, ConformanceRow]]  # <target>.<syscall>
    replay: dict[str, dict[str, dict[str, dict[str, Replay]]]]  # <target>.<dir>.<sync>.<n>
    clients: ClientsThresholds


#: The names io itself gives below a target, by scope: every test or column it can run (a
#: near miss of one is a misspelling even when this spec does not run it).
_NAMES: dict[str, Collection[str]] = {
    "matrix": get_args(IozoneTest),
    "bonnie": get_args(BonnieColumn),
    "concurrency": get_args(ConcurrencyTest),
}


#: Stands for a dot inside a target name while the path is walked part by part.
_DOT = "\x00"


def _one_part(metric: str, targets: Collection[str]) -> str:
    """``metric`` with its target as one part: a target name may hold dots
    (``matrix.nfs.v4.read.speedup``); the longest name first, as io's table reads it."""
    scope, _, rest = metric.partition(".")
    if scope == "clients":  # clients.<layout>.<target>...
        layout, _, rest = rest.partition(".")
        scope = f"{scope}.{layout}"
    for name in sorted(targets, key=len, reverse=True):
        if rest.startswith(name + "."):
            return f"{scope}.{name.replace('.', _DOT)}{rest[len(name) :]}"
    return metric


def threshold_problem(metric: str, targets: Collection[str]) -> tuple[str, str | None] | None:
    """Why ``metric`` names no figure of an io run on ``targets``: (what is wrong, the path
    it probably meant or None); None when it may."""
    problem = _problem(_one_part(metric, targets), [t.replace(".", _DOT) for t in targets])
    if problem is None:
        return None
    message, instead = problem
    return message.replace(_DOT, "."), instead.replace(_DOT, ".") if instead else None


def _problem(metric: str, targets: Collection[str]) -> tuple[str, str | None] | None:
    scope = metric.partition(".")[0]
    if scope not in IoThresholds.model_fields:
        # io has no default scope: any other start is refused after the run, so here too
        return path_problem(IoThresholds, metric) or (
            f"'{scope}' names nothing: io's paths start with "
            + ", ".join(f"{k}." for k in IoThresholds.model_fields),
            None,
        )

    def known(prefix: tuple[str, ...]) -> Collection[str] | None:
        if prefix[0] == "clients":  # clients.<layout>.<target>[.<test>]
            if len(prefix) == 2:
                return targets
            return get_args(ClientTest) if len(prefix) == 3 and prefix[1] != "same_file" else None
        if len(prefix) == 1:
            return targets
        return _NAMES.get(prefix[0]) if len(prefix) == 2 else None

    return path_problem(IoThresholds, metric, known)


def check_io_spec(spec: IoSpec, data: dict[str, Any]) -> SpecProblem | None:
    """The first threshold of ``spec`` whose path no io run on its targets can have."""
    targets = [t.name for t in spec.targets]
    problem = misspelt_threshold(data, lambda m: threshold_problem(m, targets), "docs/io.md")
    # a sampled host, or a client host, that the inventory lacks
    r = spec.resilience
    writers = hosts_problem(r.inventory, r.hosts or [], "resilience") if r is not None else None
    return problem or sampling_problem(spec.sampling) or clients_problem(spec.clients) or writers
