"""Sampling around any family's run command, each progress step a phase.

A family whose spec has a ``sampling:`` block hands :func:`gridbench.cliargs.run_and_show`
a :class:`StepSampling`: at every step of the run's progress (io: a target's test and
repetition; net: an environment's pattern) a phase begins, named by the step, and the one
before ends. The sampler starts at the first step after the run's folder exists and stops
with the run. Each phase is appended to ``RUN/samples/phases/steps.jsonl`` when it begins and
when it ends (fsynced: a phase cut by a kill -9 ends at the last sample). The report of a
:class:`gridbench.family.module_family.ModuleFamily` adds the sampling sections over these phases
(:func:`run_sections`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError
from gridbench.hosts.sampling.analysis import Phase, read_sample_file, read_samples
from gridbench.hosts.sampling.report import sampling_sections
from gridbench.hosts.sampling.sampler import SAMPLES_DIR, HostTarget, Sampler
from gridbench.hosts.sampling.spec import LOCAL, SamplingSpec, load_targets
from gridbench.sections import Report, Section
from gridbench.store.records import append_record

#: under RUN/samples (a folder, so no host's file can be it)
PHASES_FILE = "phases/steps.jsonl"


class StepSampling:
    """The hosts of a ``sampling:`` block sampled during a run, one phase per step. The
    hosts are looked up at once (a name the inventory lacks is one SpecError before the run
    starts)."""

    def __init__(self, spec: SamplingSpec, targets: Sequence[HostTarget] | None = None) -> None:
        self.targets = list(targets) if targets is not None else load_targets(spec)
        self.interval = spec.interval
        self.sampler: Sampler | None = None
        self.folder: Path | None = None
        self._open: tuple[str, float] | None = None
        self._names: dict[str, int] = {}
        #: why the phases stopped being recorded (their file cannot be written), else None
        self.error: str | None = None

    def step(self, run: Path | None, label: str) -> None:
        """A step begins (``run``: the run's folder, None while it does not exist yet)."""
        if run is None:
            return
        if self.sampler is None:
            self.folder = run / SAMPLES_DIR
            self.sampler = Sampler(self.folder, self.targets, self.interval)
            self.sampler.start()
        self._end()
        name = " ".join(str(label).split())[:120] or "step"
        seen = self._names.get(name, 0) + 1
        self._names[name] = seen
        if seen > 1:
            name = f"{name} ({seen})"
        self._open = (name, time.time())
        self._append({"kind": "phase-start", "name": name, "start": self._open[1]})

    def _end(self) -> None:
        if self._open is None:
            return
        name, start = self._open
        self._open = None
        self._append({"kind": "phase", "name": name, "start": start, "end": time.time()})

    def _append(self, obj: dict[str, Any]) -> None:
        if self.folder is None or self.error is not None:
            return
        path = self.folder / PHASES_FILE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            append_record(path, obj)
        except (GridbenchError, OSError) as exc:  # a link planted there: the run goes on
            self.error = f"the sampling phases are not recorded: {exc}"
            logging.getLogger(__name__).warning("%s", self.error)

    def close(self) -> None:
        """The last phase ends and sampling stops (everything sampled is on disk)."""
        self._end()
        if self.sampler is not None:
            self.sampler.stop()


def read_phases(run: Path, until: float | None = None) -> list[Phase]:
    """The phases of a run's ``RUN/samples/phases/steps.jsonl`` (foreign: checked), in time
    order; one that began and never ended (a kill -9) ends at ``until``."""
    records, _ = read_sample_file(run / SAMPLES_DIR / PHASES_FILE)
    ended: dict[str, Phase] = {}
    started: dict[str, float] = {}
    for r in records:
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            continue
        start, end = r.get("start"), r.get("end")
        if not isinstance(start, int | float) or isinstance(start, bool):
            continue
        if r.get("kind") == "phase-start":
            started[r["name"]] = float(start)
        elif r.get("kind") == "phase" and isinstance(end, int | float) and end >= start:
            ended[r["name"]] = Phase(r["name"][:200], float(start), float(end))
    for name, start in started.items():
        if name not in ended and until is not None and until > start:
            ended[name] = Phase(name[:200], start, until)
    return sorted(ended.values(), key=lambda p: p.start)


def client_and_servers(spec: Mapping[str, Any] | None) -> tuple[str, list[str]]:
    """A spec's ``sampling.client`` (default local) and its other sampled hosts (plain,
    foreign data: checked)."""
    block = spec.get("sampling") if isinstance(spec, Mapping) else None
    block = block if isinstance(block, Mapping) else {}
    named = block.get("client")
    client = named if isinstance(named, str) else LOCAL
    hosts = block.get("hosts")
    if not isinstance(hosts, list):
        return client, []
    return client, [h for h in hosts if isinstance(h, str) and h != client]


def run_sections(run: Path, spec: Mapping[str, Any] | None) -> list[Section]:
    """The sampling sections of a run sampled step by step (none when nothing was)."""
    samples = read_samples(run)
    if samples.empty:
        return []
    last = samples.hosts["t"].max() if not samples.hosts.is_empty() else None
    until = float(last) if isinstance(last, int | float) else None
    client, servers = client_and_servers(spec)
    return sampling_sections(samples, read_phases(run, until), client=client, servers=servers)


def with_sampling(report: Report, run: Path, spec: Mapping[str, Any] | None) -> Report:
    """``report`` with the sampling sections of ``run`` after its own (itself when the run
    sampled nothing)."""
    import dataclasses

    sampled = run_sections(run, spec)
    if not sampled:
        return report
    return dataclasses.replace(report, sections=(*report.sections, *sampled))
