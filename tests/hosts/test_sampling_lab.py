"""Sampling on the session's lab (``lab`` of tests/lab_fixtures.py: network namespaces,
each with its sshd and node_exporter; made by ``gridbench lab up``, root only), two of its
hosts: both are scraped; a busy process on one host shows in its samples through the SSH
probe; with that host's node_exporter stopped (SIGSTOP, so it answers nothing; SIGCONT
after, for the rest of the session), the SSH probe takes over its figures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from gridbench.hosts.lab.book import STATE_ROOT
from gridbench.hosts.sampling.analysis import read_samples
from gridbench.hosts.sampling.sampler import Sampler
from gridbench.hosts.sampling.spec import SamplingSpec, host_targets
from lab_fixtures import Lab


def _exporter_pid(name: str, netns: str) -> int:
    state = json.loads((STATE_ROOT / name / "state.json").read_text())
    (pid,) = [
        r["pid"]
        for r in state["resources"]
        if r["kind"] == "process" and r.get("role") == "node_exporter" and r.get("netns") == netns
    ]
    return int(pid)


async def test_lab_hosts_sampled_and_ssh_takes_over(lab: Lab, tmp_path: Path) -> None:
    name, inv = lab.name, lab.inv
    h1, h2 = lab.host(1).name, lab.host(2).name
    ns1 = inv.hosts[h1].netns
    assert ns1 is not None and all(inv.hosts[h].exporter for h in (h1, h2))
    loop = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"
    busy = subprocess.Popen(["ip", "netns", "exec", ns1, sys.executable, "-c", loop])
    try:
        spec = SamplingSpec.model_validate(
            {
                "hosts": [h1, h2],
                "interval": "0.5s",
                "processes": [{"host": h1, "pid": busy.pid, "label": "busy"}],
            }
        )
        sampler = Sampler(tmp_path / "samples", host_targets(spec, inv), spec.interval)
        ev = asyncio.Event()
        task = asyncio.create_task(sampler.run(ev))
        exporter = _exporter_pid(name, ns1)
        try:
            await asyncio.sleep(3.0)
            os.kill(exporter, signal.SIGSTOP)  # the shared lab's: continued below
            t_kill = time.time()
            await asyncio.sleep(8.0)
        finally:
            ev.set()
            try:
                await asyncio.wait_for(task, 15)
            finally:
                os.kill(exporter, signal.SIGCONT)
    finally:
        busy.kill()
        busy.wait(10)
    s = read_samples(tmp_path)
    one = s.hosts.filter(pl.col("host") == h1)
    two = s.hosts.filter(pl.col("host") == h2)
    assert set(two["source"].to_list()) == {"exporter"} and two.height >= 15
    assert "exporter" in one.filter(pl.col("t") < t_kill)["source"].to_list()
    assert set(one.filter(pl.col("t") > t_kill + 1)["source"].to_list()) == {"ssh"}
    assert any(w["code"] == "exporter-down" and w["host"] == h1 for w in s.warnings)
    assert not any(w["code"] == "nothing-sampled" for w in s.warnings), s.warnings
    hot = s.processes.filter((pl.col("label") == "busy") & (pl.col("state") == "running"))
    cpu = hot["cpu_percent"].drop_nulls().to_list()
    assert len(cpu) >= 5 and sum(cpu) / len(cpu) > 8.0, cpu  # a busy loop, on a shared machine
