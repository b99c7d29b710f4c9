"""An io run with a sampling: block, end to end through the CLI: the controller and a
node_exporter host (from an inventory) sampled during the run, each io step a phase of the
report's chart and tables."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import BIN, cli_env
from gridbench.family import family_of
from gridbench.hosts.sampling.phases import read_phases
from gridbench.sections import Chart
from gridbench.store.layout import RunDir
from sampling_fixtures import Exporter, exporter  # noqa: F401

SPEC = """
name: sampled-io
targets:
  - {{name: a, path: {a}}}
repetitions: 2
cache: none
iozone: {{file_size: 4M, record_size: 64k, tests: [write, read]}}
bonnie: {{enabled: false}}
sampling:
  hosts: [local, exp-1]
  interval: 0.2s
  inventory: {inventory}
"""


def test_a_sampled_io_run(tmp_path: Path, exporter: Exporter) -> None:  # noqa: F811
    inv = tmp_path / "inventory.yaml"
    inv.write_text(f'hosts:\n  exp-1: {{address: 127.0.0.1, exporter: "{exporter.url}"}}\n')
    (tmp_path / "a").mkdir()
    spec = tmp_path / "io.yaml"
    spec.write_text(SPEC.format(a=tmp_path / "a", inventory=inv))
    results = tmp_path / "results"
    r = subprocess.run(
        [str(BIN), "io", "run", str(spec)],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
    (run,) = [p.parent for p in results.glob("*/experiment.json")]
    phases = read_phases(run)
    assert len(phases) >= 2 and all(p.end >= p.start for p in phases), phases
    for host in ("local", "exp-1"):
        lines = [
            json.loads(x) for x in (run / "samples" / f"{host}.jsonl").read_text().splitlines()
        ]
        assert sum(1 for x in lines if x["kind"] == "sample") >= 2, (host, lines[:3])
    rd = RunDir(run)
    rep = family_of(rd).report(rd, json.loads((run / "metrics.json").read_text()))
    chart = next(s for s in rep.sections if isinstance(s, Chart) and s.id == "sampling-chart")
    assert len(chart.figure["layout"]["shapes"]) == len(phases)
    titles = [getattr(s, "title", "") for s in rep.sections]
    assert f"Hosts during {phases[0].name}" in titles, titles


def test_io_validate_names_a_misspelt_host(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text("hosts:\n  exp-1: {address: 127.0.0.1}\n")
    (tmp_path / "a").mkdir()
    spec = tmp_path / "io.yaml"
    spec.write_text(SPEC.replace("exp-1]", "exp-l]").format(a=tmp_path / "a", inventory=inv))
    r = subprocess.run(
        [str(BIN), "io", "validate", str(spec)],
        env=cli_env(tmp_path / "results"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "did you mean 'exp-1'" in out and "io.yaml:10: field 'sampling.hosts.1'" in out, out
