"""``history`` of a run given by a path outside the results root: its history holds the
run itself (once an empty table), and the root's runs of that name beside it."""

from __future__ import annotations

import json
from pathlib import Path

from family_runs import copy_run, gb


def _entries(root: Path, ref: Path, metric: str) -> list[str]:
    p = gb(root, "history", str(ref), "--metric", metric, "--json", "--results", str(root))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return [e["experiment"] for e in json.loads(p.stdout)["entries"]]


def test_swept_history_of_a_run_outside_the_root(jobflow_run: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    assert _entries(root, jobflow_run, "latency.overall.p99") == [jobflow_run.name]
    # the same run inside the root is listed once, beside another of its name
    inside = copy_run(jobflow_run, root)
    copy_run(jobflow_run, root, "20990101T000000Z-fam-jf")
    assert _entries(root, inside, "latency.overall.p99") == [
        jobflow_run.name,
        "20990101T000000Z-fam-jf",
    ]


def test_figure_history_of_a_run_outside_the_root(net_run: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    assert _entries(root, net_run, "pingpong.tcp.host.1024.rtt_ms") == [net_run.name]
