"""A full disk during a job-flow run is one error naming the file and the space left,
not an internal error, and what was written before stays analysable (issue 22, item 6).
A real small tmpfs holds the results (the suite runs as root, as CI does)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from io_fixtures import mounted_tmpfs

SPEC = """\
name: disk-full
backend: {type: noop}
job: {command: [/bin/true]}
load: {model: open, rate: 2000/s}
trial: {duration: 20s}
safety: {max_rate: 200000, max_jobs: 100000}  # jobs per minute
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "small", "384k") as mnt:
        yield mnt


def test_a_full_disk_names_the_file_and_keeps_what_was_written(
    tmp_path: Path, small_disk: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    results = small_disk / "results"
    p = subprocess.run(
        [str(BIN), "run", str(spec), "--yes"],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = p.stdout + p.stderr
    assert "Traceback" not in out and "internal error" not in out, out[-3000:]
    assert p.returncode == 2, out[-3000:]
    assert "No space left on device" in p.stderr and "MiB free there" in p.stderr, p.stderr
    assert "events.arrows" in p.stderr or "experiment.json" in p.stderr, p.stderr  # the file
    assert "never retrieved" not in p.stderr, p.stderr
    # what reached the disk is analysable elsewhere (the full disk has no room for reports)
    (run,) = [d for d in results.iterdir() if d.is_dir()]
    copy = tmp_path / "results-copy" / run.name
    shutil.copytree(run, copy)
    a = subprocess.run(
        [str(BIN), "analyze", str(copy), "--json"],
        env=cli_env(copy.parent),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert a.returncode in (0, 1), a.stdout[-2000:] + a.stderr[-2000:]
    assert '"submitted"' in a.stdout
