"""The hosts sampled during a job-flow run (``sampling:``, docs/hosts.md): each trial is a
phase of the generic sampling sections (:mod:`gridbench.hosts.sampling.report`): CPU and
memory over time with the trials marked, a table per trial, the client-bound rule."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.hosts.sampling.analysis import read_samples
from gridbench.hosts.sampling.phases import client_and_servers
from gridbench.hosts.sampling.report import sampling_sections
from gridbench.jobflow.analysis.sampling import trial_phases
from gridbench.sections import Section


def run_sampling_sections(run_dir: Path, spec_data: Mapping[str, Any] | None) -> list[Section]:
    """The sampling sections of a run (none when it sampled nothing)."""
    samples = read_samples(run_dir)
    if samples.empty:
        return []
    client, servers = client_and_servers(spec_data)
    return sampling_sections(samples, trial_phases(run_dir), client=client, servers=servers)
