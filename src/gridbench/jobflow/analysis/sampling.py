"""metrics.json's ``sampling``: the hosts sampled during the run (``sampling:``,
docs/hosts.md), per trial (each trial a phase): every host's CPU busy mean and max, load,
memory and rates, the named processes, and the client-bound rule. Absent when the run
sampled nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.hosts.sampling.analysis import Phase
from gridbench.hosts.sampling.compared import CLIENT_BOUND, client_bound_flag
from gridbench.hosts.sampling.compared import sampling_metrics as core_sampling_metrics
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


def sampling_metrics(run_dir: Path, spec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``sampling`` object of metrics.json (each trial a phase), or None when nothing
    was sampled (:func:`gridbench.hosts.sampling.compared.sampling_metrics`)."""
    return core_sampling_metrics(run_dir, trial_phases(run_dir), spec)


def mark_client_bound(trials: Sequence[dict[str, Any]], sampled: Mapping[str, Any] | None) -> None:
    """The client-bound rule (``client_bound``) applied to the trials' metrics: the trial
    during which the load's host saturated before any server host did is invalid, with
    the rule's reason (in place)."""
    flag = client_bound_flag(sampled)
    if flag is None:
        return
    for t in trials:
        validity = t.get("validity")
        if t.get("trial_id") != flag["phase"] or not isinstance(validity, dict):
            continue
        t["valid"] = False
        validity["valid"] = False
        validity["client_bound"] = True
        validity.setdefault("reasons", []).append(f"{flag['detail']} ({CLIENT_BOUND})")
