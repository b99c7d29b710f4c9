"""What every family writes of its samples to metrics.json, applies as a validity rule and
hands ``gridbench compare`` and ``history`` (docs/hosts.md, docs/compare.md).

- :func:`sampling_metrics`: metrics.json's ``sampling`` object from a run's samples and its
  phases (job flow: its trials; io and net: their steps, :func:`step_sampling_metrics`):
  the hosts, one row per phase and host (CPU busy mean and max, with the interval values
  behind the mean, load, memory, disk and network rates), the named processes, the
  client-bound finding, how many warnings and unreadable lines.
- :data:`CLIENT_BOUND_RULE` and :func:`client_bound_flag`: the client-bound rule as a
  validity rule; :func:`with_sampling_metrics` adds the object and the rule's flag to a
  family's metrics (``validity`` as :func:`gridbench.schema.validity_document` makes it).
- :func:`sampling_figures` (flat figures: ``sampling.<host>.<phase>.cpu_busy_pct``, its
  samples the phase's interval values) for a :class:`~gridbench.family.Comparable`
  family; :func:`swept_sampling_figures` and :func:`phase_values`
  (``sampling.<host>.cpu_busy_pct``, one value per repetition's phase) for a swept one.

Pure but for reading the run's sample files; metrics.json is foreign input here: every
value is checked before use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.family import Figure
from gridbench.hosts.sampling.analysis import (
    SATURATED,
    Phase,
    Samples,
    client_bound,
    phase_figures,
    process_figures,
    read_samples,
)
from gridbench.hosts.sampling.phases import client_and_servers, read_phases
from gridbench.schema import ValidityRule
from gridbench.sections import Finding
from gridbench.swept import SweptFigure

CLIENT_BOUND = "client_bound"
CLIENT_BOUND_RULE = ValidityRule(
    CLIENT_BOUND,
    f"a run whose load's own host (sampling.client, default local) was {SATURATED:g}% CPU "
    "busy or more over a phase before any other sampled host was is flagged: the figures "
    "measure the client as much as the server (only with a sampling: block naming a "
    "server host beside the load's).",
)
PREFIX = "sampling."
#: the figures compared, per host (and phase): key suffix, label, unit, the row's field
CPU_BUSY = "cpu_busy_pct"
#: the most interval values kept per phase and host (a day's run at 1 s: no cap hit)
MAX_VALUES = 100_000


def _rows(df: pl.DataFrame) -> list[dict[str, Any]]:
    return [
        {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
        for r in df.iter_rows(named=True)
    ]


def _cpu_values(samples: Samples, phases: Sequence[Phase]) -> dict[tuple[str, str], list[float]]:
    """Per (phase, host) the CPU busy % of each interval in it (as :func:`phase_figures`
    places them: by the middle of the interval)."""
    df = samples.hosts.filter(pl.col("cpu_busy").is_not_null())
    mid = pl.col("t") - pl.col("interval_s").fill_null(0.0) / 2
    out: dict[tuple[str, str], list[float]] = {}
    for ph in phases:
        inside = df.filter((mid >= ph.start) & (mid < ph.end))
        for host, busy in zip(inside["host"].to_list(), inside["cpu_busy"].to_list(), strict=True):
            out.setdefault((ph.name, host), []).append(round(float(busy), 2))
    return out


def sampling_metrics(
    run: Path, phases: Sequence[Phase], spec: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """metrics.json's ``sampling`` object for a run sampled over ``phases`` (in any
    family), or None when the run sampled nothing. ``spec``: the run's spec (its
    ``sampling.client`` and ``hosts`` name the client-bound rule's hosts)."""
    samples = read_samples(run)
    if samples.empty:
        return None
    figures = phase_figures(samples, phases)
    client, servers = client_and_servers(spec)
    bound = client_bound(figures, phases, client, servers)
    values = _cpu_values(samples, phases)
    rows = _rows(figures)
    for r in rows:
        r["cpu_busy_values"] = values.get((r["phase"], r["host"]), [])[:MAX_VALUES]
    return {
        "hosts": sorted(set(samples.hosts["host"].to_list())),
        "client": client,
        "phases": rows,
        "processes": _rows(process_figures(samples, phases)),
        "client_bound": {"flagged": bound.flagged, "phase": bound.phase, "reason": bound.reason},
        "warnings": len(samples.warnings),
        "unreadable_lines": samples.bad_lines,
    }


def step_sampling_metrics(run: Path, spec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """:func:`sampling_metrics` of a run sampled step by step (io, net: the phases of
    ``RUN/samples/phases/steps.jsonl``; one cut by a kill -9 ends at the last sample)."""
    samples = read_samples(run)
    if samples.empty:
        return None
    last = samples.hosts["t"].max() if not samples.hosts.is_empty() else None
    until = float(last) if isinstance(last, int | float) else None
    return sampling_metrics(run, read_phases(run, until), spec)


def client_bound_flag(sampling: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The client-bound rule's validity flag (``rule``, ``host``, ``phase``, ``at``,
    ``detail``) when ``sampling`` (metrics.json's object) says the run was client-bound."""
    if not isinstance(sampling, Mapping):
        return None
    found = sampling.get("client_bound")
    if not isinstance(found, Mapping) or found.get("flagged") is not True:
        return None
    phase = found.get("phase")
    client = sampling.get("client")
    return {
        "rule": CLIENT_BOUND,
        "host": str(client) if isinstance(client, str) else None,
        "phase": str(phase) if isinstance(phase, str) else None,
        "at": str(phase) if isinstance(phase, str) else None,
        "detail": str(found.get("reason") or "client-bound"),
    }


def with_sampling_metrics(
    metrics: dict[str, Any], sampling: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``metrics`` (a family's, ``validity`` as :func:`gridbench.schema.validity_document`
    writes it) with ``sampling`` and, when it says so, the client-bound flag in its
    validity (then not valid). Unchanged when nothing was sampled."""
    if sampling is None:
        return metrics
    out = {**metrics, "sampling": dict(sampling)}
    flag = client_bound_flag(sampling)
    validity = metrics.get("validity")
    if flag is not None and isinstance(validity, Mapping):
        flags = validity.get("flags")
        out["validity"] = {
            **validity,
            "valid": False,
            "flags": [*(flags if isinstance(flags, list) else []), flag],
        }
    return out


# -- compare and history ---------------------------------------------------------------


def _phase_rows(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    sampling = metrics.get("sampling")
    rows = sampling.get("phases") if isinstance(sampling, Mapping) else None
    if not isinstance(rows, list):
        return []
    return [
        r
        for r in rows
        if isinstance(r, Mapping)
        and isinstance(r.get("host"), str)
        and isinstance(r.get("phase"), str)
    ]


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if f == f and abs(f) != float("inf") else None


def _busy_samples(row: Mapping[str, Any]) -> tuple[float, ...]:
    values = row.get("cpu_busy_values")
    got = [_number(v) for v in values] if isinstance(values, list) else []
    kept = tuple(v for v in got if v is not None)
    if kept:
        return kept
    mean = _number(row.get("cpu_busy_mean"))
    return () if mean is None else (mean,)


def sampling_figures(metrics: Mapping[str, Any]) -> list[Figure]:
    """The flat figures of a run's ``sampling`` object: per host and phase
    ``sampling.<host>.<phase>.cpu_busy_pct``, the CPU busy % of each interval of the
    phase (its mean is the phase's mean; lower is better, for the same load)."""
    out = []
    for r in _phase_rows(metrics):
        host, phase = r["host"], r["phase"]
        samples = _busy_samples(r)
        if samples:
            out.append(
                Figure(
                    f"{PREFIX}{host}.{phase}.{CPU_BUSY}",
                    f"CPU busy on {host} during {phase}",
                    "%",
                    samples,
                    higher_is_better=False,
                )
            )
    return out


def is_sampling_key(key: str) -> bool:
    """Whether ``key`` names a host's sampled figure (``sampling.<host>.cpu_busy_pct``)."""
    return key.startswith(PREFIX) and key.endswith(f".{CPU_BUSY}")


def _host_of(key: str) -> str:
    return key[len(PREFIX) : -len(f".{CPU_BUSY}")]


def swept_sampling_figures(runs: Sequence[Mapping[str, Any]]) -> list[SweptFigure]:
    """For a swept family (each repetition a phase): ``sampling.<host>.cpu_busy_pct``
    for every host every run of ``runs`` (their metrics) sampled, Welch across the
    repetitions' phase means."""
    if not runs:
        return []
    hosts = [sorted({r["host"] for r in _phase_rows(m)}) for m in runs]
    common = [h for h in hosts[0] if all(h in other for other in hosts[1:])]
    return [
        SweptFigure(f"{PREFIX}{h}.{CPU_BUSY}", f"CPU busy on {h} (sampled)", "%", False, "welch-t")
        for h in common
    ]


def phase_values(metrics: Mapping[str, Any], key: str, phases: Sequence[str]) -> list[float]:
    """The values of the swept figure ``key`` (``sampling.<host>.cpu_busy_pct``) in the
    ``phases`` named (a point's repetitions), in their order: each phase's CPU busy mean
    on that host; a phase without one is left out."""
    if not is_sampling_key(key):
        return []
    host = _host_of(key)
    means = {
        r["phase"]: _number(r.get("cpu_busy_mean"))
        for r in _phase_rows(metrics)
        if r["host"] == host
    }
    found = [means.get(p) for p in phases]
    return [v for v in found if v is not None]


def client_bound_finding(metrics: Mapping[str, Any]) -> Finding | None:
    """The headline's line for a client-bound flag in ``metrics["validity"]``."""
    validity = metrics.get("validity")
    flags = validity.get("flags") if isinstance(validity, Mapping) else None
    found = [
        f
        for f in (flags if isinstance(flags, list) else [])
        if isinstance(f, Mapping) and f.get("rule") == CLIENT_BOUND
    ]
    if not found:
        return None
    return Finding(
        "warn",
        f"client-bound ({CLIENT_BOUND}): the load's own host saturated before any server host",
        str(found[0].get("detail") or ""),
    )
