"""The hosts sampled during a job-flow run (``sampling:``, docs/hosts.md): each trial is a
phase of the generic sampling sections (:mod:`gridbench.hosts.sampling.report`): CPU and
memory over time with the trials marked, a table per trial, the client-bound rule."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.hosts.sampling.analysis import Phase, read_samples
from gridbench.hosts.sampling.report import sampling_sections
from gridbench.hosts.sampling.spec import LOCAL
from gridbench.jobflow.analysis.load import read_trial_info, trial_dirs
from gridbench.sections import Section


def trial_phases(run_dir: Path) -> list[Phase]:
    """Each trial that started and ended, as a phase (its trial.json's times)."""
    out = []
    for d in trial_dirs(run_dir):
        try:
            info = read_trial_info(d)
        except ResultsError:
            continue  # the analysis says what is wrong with it
        if info.started_ns is not None and info.ended_ns is not None:
            out.append(Phase(info.trial_id, info.started_ns / 1e9, info.ended_ns / 1e9))
    return sorted(out, key=lambda p: p.start)


def run_sampling_sections(run_dir: Path, spec_data: Mapping[str, Any] | None) -> list[Section]:
    """The sampling sections of a run (none when it sampled nothing)."""
    samples = read_samples(run_dir)
    if samples.empty:
        return []
    block = spec_data.get("sampling") if isinstance(spec_data, Mapping) else None
    block = block if isinstance(block, Mapping) else {}
    named = block.get("client")
    client = named if isinstance(named, str) else LOCAL
    hosts = block.get("hosts")
    servers = (
        [h for h in hosts if isinstance(h, str) and h != client] if isinstance(hosts, list) else []
    )
    return sampling_sections(samples, trial_phases(run_dir), client=client, servers=servers)
