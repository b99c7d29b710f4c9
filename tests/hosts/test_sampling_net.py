"""A net run with a sampling: block, end to end through the CLI: this controller sampled
during the run, each net step a phase of the report's chart and tables."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import BIN, cli_env
from gridbench.family import family_of
from gridbench.hosts.sampling.phases import read_phases
from gridbench.sections import Chart
from gridbench.store.layout import RunDir

SPEC = """
name: sampled-net
environments: [process]
pingpong:
  transports: [tcp]
  sizes: {min: 0, max: 1k}
  tests: 3
  round_trips: 10
floor:
  duration: 1s
sampling:
  hosts: [local]
  interval: 0.2s
"""


def test_a_sampled_net_run(tmp_path: Path) -> None:
    spec = tmp_path / "net.yaml"
    spec.write_text(SPEC)
    results = tmp_path / "results"
    r = subprocess.run(
        [str(BIN), "net", "run", str(spec)],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
    (run,) = [p.parent for p in results.glob("*/experiment.json")]
    phases = read_phases(run)
    assert phases and all(p.end >= p.start for p in phases), phases
    rd = RunDir(run)
    rep = family_of(rd).report(rd, json.loads((run / "metrics.json").read_text()))
    chart = next(s for s in rep.sections if isinstance(s, Chart) and s.id == "sampling-chart")
    assert len(chart.figure["layout"]["shapes"]) == len(phases)
    titles = [getattr(s, "title", "") for s in rep.sections]
    assert f"Hosts during {phases[0].name}" in titles, titles
