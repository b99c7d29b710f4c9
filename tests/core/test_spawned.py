"""A recorded process is recognised only by its pid AND its recorded start time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from gridbench.store.spawned import live_runner, recorded_process


def test_a_live_process_with_its_start_time_is_ours_and_any_other_record_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        created = psutil.Process(child.pid).create_time()
        proc, why = recorded_process(child.pid, created)
        assert proc is not None and proc.pid == child.pid and why == ""
        assert recorded_process(child.pid, created + 5)[1].startswith("not ours")
        assert recorded_process(child.pid, None)[1].startswith("no start time recorded")
        assert recorded_process(child.pid, float("nan"))[1].startswith("no start time")
        assert recorded_process(child.pid, True)[0] is None
        assert recorded_process("12", created)[1].startswith("no valid pid")
        assert recorded_process(1, created)[0] is None
        assert live_runner(child.pid, created, None) == child.pid
        assert live_runner(child.pid, created - 1, None) is None
        # an old run with no start time: a process started after its files is not its runner
        assert live_runner(child.pid, None, created - 60) is None
        assert live_runner(child.pid, None, created + 60) == child.pid
    finally:
        child.kill()
        child.wait()
    assert recorded_process(child.pid, created) == (None, "already gone")
    assert live_runner(child.pid, created, None) is None


def test_a_zombie_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    created = psutil.Process(child.pid).create_time()
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    try:
        assert recorded_process(child.pid, created) == (None, "already gone")
        assert live_runner(child.pid, created, None) is None
    finally:
        child.wait()
    assert os.getpid() > 1


def test_a_folder_of_a_killed_process_is_kept_while_a_holder_runs(tmp_path: Path) -> None:
    """A killed controller's grid folder, still used by the grid, survives another run's
    sweep; once the grid is gone too, the next sweep removes it."""
    from gridbench.store.spawned import add_holder, sweep_orphaned

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    folder = tmp_path / f"gridbench-grid-{dead.stdout.strip()}-abc"
    folder.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        add_holder(folder, holder.pid)
        assert sweep_orphaned("gridbench-grid-", tmp_path) == []
        assert folder.is_dir()
    finally:
        holder.kill()
        holder.wait()
    assert sweep_orphaned("gridbench-grid-", tmp_path) == [folder]
    assert not folder.exists()
