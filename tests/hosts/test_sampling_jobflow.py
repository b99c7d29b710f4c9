"""A job-flow run with a sampling: block, end to end through the CLI: two hosts (this
controller, and a node_exporter on loopback named by an inventory) sampled during the run,
each trial a phase of the report's chart and tables; a typo in a host name is one error
with a "did you mean" before anything runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import BIN, cli_env
from sampling_fixtures import Exporter, exporter  # noqa: F401

SPEC = """
name: sampled-local
backend: {{type: local, options: {{slots: 2}}}}
job: {{command: [/bin/sleep, "0.2"]}}
load: {{model: open, rate: 4/s}}
trials: 2
trial: {{duration: 2s}}
sampling:
  hosts: [local, {host}]
  interval: 0.5s
  inventory: {inventory}
  processes: [{{host: local, name: sleep}}]
"""


def _write(tmp_path: Path, exporter_url: str, host: str) -> Path:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(f'hosts:\n  exp-1: {{address: 127.0.0.1, exporter: "{exporter_url}"}}\n')
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(host=host, inventory=inv))
    return spec


def test_a_sampled_job_flow_run(tmp_path: Path, exporter: Exporter) -> None:  # noqa: F811
    results = tmp_path / "results"
    spec = _write(tmp_path, exporter.url, "exp-1")
    r = subprocess.run(
        [str(BIN), "run", str(spec), "--yes"],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (run,) = [p.parent for p in results.glob("*/experiment.json")]
    for host in ("local", "exp-1"):
        lines = [
            json.loads(x) for x in (run / "samples" / f"{host}.jsonl").read_text().splitlines()
        ]
        samples = [x for x in lines if x["kind"] == "sample"]
        assert len(samples) >= 4, (host, lines[:3])
        assert {x["source"] for x in samples} == {"local" if host == "local" else "exporter"}
        assert not [x for x in lines if x["kind"] == "warning"], lines
    r = subprocess.run(
        [str(BIN), "report", str(run)],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    from gridbench.family import family_of
    from gridbench.store.layout import RunDir

    rd = RunDir(run)
    fam = family_of(rd)
    metrics = json.loads((run / "metrics.json").read_text())
    sampled = metrics["sampling"]  # per trial and host, for compare and history
    assert sampled["hosts"] == ["exp-1", "local"]
    assert {(r["phase"], r["host"]) for r in sampled["phases"]} == {
        (t, h) for t in ("p00-t00", "p00-t01") for h in ("exp-1", "local")
    }
    assert all(r["samples"] >= 2 and r["cpu_busy_mean"] is not None for r in sampled["phases"])
    assert sampled["client_bound"]["flagged"] in (True, False)
    rep = fam.report(rd, metrics)
    ids = [s.id for s in rep.sections]
    assert "sampling-chart" in ids
    titles = [getattr(s, "title", "") for s in rep.sections]
    assert "Hosts during p00-t00" in titles and "Hosts during p00-t01" in titles, titles
    chart = next(s for s in rep.sections if s.id == "sampling-chart")
    assert len(chart.figure["layout"]["shapes"]) == 2  # the two trials marked
    html = next(run.glob("report*.html"), None)
    assert html is not None and "Hosts during p00-t00" in html.read_text()


def test_a_misspelt_host_is_refused_before_the_run(tmp_path: Path, exporter: Exporter) -> None:  # noqa: F811
    results = tmp_path / "results"
    spec = _write(tmp_path, exporter.url, "exp-l")
    r = subprocess.run(
        [str(BIN), "validate", str(spec)],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0
    assert "did you mean 'exp-1'" in r.stdout + r.stderr
    assert not results.exists() or not list(results.glob("*/experiment.json"))
