"""metrics.json's ``sampling``: the hosts sampled during the run (``sampling:``,
docs/hosts.md), per trial (each trial a phase): every host's CPU busy mean and max, load,
memory and rates, the named processes, and the client-bound rule. Absent when the run
sampled nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.hosts.sampling.analysis import (
    Phase,
    client_bound,
    phase_figures,
    process_figures,
    read_samples,
)
from gridbench.hosts.sampling.spec import LOCAL
from gridbench.jobflow.analysis.load import read_trial_info, trial_dirs


def trial_phases(run_dir: Path) -> list[Phase]:
    """Each trial that started and ended, as a phase (its trial.json's times)."""
    out = []
    for d in trial_dirs(run_dir):
        try:
            info = read_trial_info(d)
        except ResultsError:
            continue  # the trial's own analysis says what is wrong with it
        if info.started_ns is not None and info.ended_ns is not None:
            out.append(Phase(info.trial_id, info.started_ns / 1e9, info.ended_ns / 1e9))
    return sorted(out, key=lambda p: p.start)


def client_and_servers(spec: Mapping[str, Any] | None) -> tuple[str, list[str]]:
    """The spec's ``sampling.client`` (default local) and its other sampled hosts."""
    block = spec.get("sampling") if isinstance(spec, Mapping) else None
    block = block if isinstance(block, Mapping) else {}
    named = block.get("client")
    client = named if isinstance(named, str) else LOCAL
    hosts = block.get("hosts")
    if not isinstance(hosts, list):
        return client, []
    return client, [h for h in hosts if isinstance(h, str) and h != client]


def _rows(df: Any) -> list[dict[str, Any]]:
    return [
        {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
        for r in df.iter_rows(named=True)
    ]


def sampling_metrics(run_dir: Path, spec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``sampling`` object of metrics.json, or None when nothing was sampled."""
    samples = read_samples(run_dir)
    if samples.empty:
        return None
    phases = trial_phases(run_dir)
    figures = phase_figures(samples, phases)
    client, servers = client_and_servers(spec)
    bound = client_bound(figures, phases, client, servers)
    return {
        "hosts": sorted(set(samples.hosts["host"].to_list())),
        "phases": _rows(figures),
        "processes": _rows(process_figures(samples, phases)),
        "client_bound": {"flagged": bound.flagged, "phase": bound.phase, "reason": bound.reason},
        "warnings": len(samples.warnings),
        "unreadable_lines": samples.bad_lines,
    }
