"""The sampler on real hosts of this machine: a busy process shows in the samples; with
node_exporter stopped, the SSH probe (a real sshd on loopback) takes over, or a named
warning says nothing is sampled; a kill -9 leaves every sample written readable."""

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

from gridbench.hosts.sampling.analysis import read_samples
from gridbench.hosts.sampling.sampler import HostTarget, Sampler
from sampling_fixtures import (  # noqa: F401
    Exporter,
    Sshd,
    busy,
    exporter,
    idle,
    sample_for,
    sshd,
    start_exporter,
    stop,
)

_sample = sample_for


def _cpu(run: Path, host: str, label: str) -> list[float]:
    p = read_samples(run).processes
    rows = p.filter(
        (pl.col("host") == host) & (pl.col("label") == label) & (pl.col("state") == "running")
    )
    return [v for v in rows["cpu_percent"].to_list() if v is not None]


async def test_a_busy_process_shows_in_the_samples(
    tmp_path: Path,
    busy: subprocess.Popen[bytes],  # noqa: F811
    idle: subprocess.Popen[bytes],  # noqa: F811
) -> None:
    procs = ({"label": "busy", "pid": busy.pid}, {"label": "idle", "pid": idle.pid})
    await _sample(Sampler(tmp_path / "samples", [HostTarget("local", processes=procs)], 0.5), 3.5)
    hot, cold = _cpu(tmp_path, "local", "busy"), _cpu(tmp_path, "local", "idle")
    assert len(hot) >= 4 and len(cold) >= 4
    # a busy loop holds a core (less when the machine is shared), a sleeper none
    assert sum(hot) / len(hot) > 8.0, hot
    assert sum(hot) / len(hot) > 5 * (sum(cold) / len(cold) + 1.0), (hot, cold)
    s = read_samples(tmp_path)
    busy_share = s.hosts["cpu_busy"].drop_nulls().to_list()
    assert busy_share and min(busy_share) > 0.0
    assert s.warnings == []


async def test_ssh_takes_over_when_the_exporter_stops(
    tmp_path: Path,
    sshd: Sshd,  # noqa: F811
    busy: subprocess.Popen[bytes],  # noqa: F811
) -> None:
    ex = start_exporter(tmp_path / "exporter")
    target = HostTarget(
        "h1",
        exporter=ex.url,
        address="127.0.0.1",
        ssh=sshd.options(),
        python=sys.executable,  # this venv's: it has psutil
        processes=({"label": "busy", "pid": busy.pid},),
    )
    sampler = Sampler(tmp_path / "samples", [target], 0.5)
    ev = asyncio.Event()
    task = asyncio.create_task(sampler.run(ev))
    try:
        await asyncio.sleep(3.0)
        ex.stop()
        t_stop = time.time()
        await asyncio.sleep(7.0)
    finally:
        ex.stop()
        ev.set()
        await asyncio.wait_for(task, 15)
    s = read_samples(tmp_path)
    src = s.hosts.select("source", "t")
    before = src.filter(pl.col("t") < t_stop)["source"].to_list()
    after = src.filter(pl.col("t") > t_stop)["source"].to_list()
    assert "exporter" in before, before
    assert after and set(after) == {"ssh"}, after
    assert any(w["code"] == "exporter-down" for w in s.warnings), s.warnings
    assert not any(w["code"] == "nothing-sampled" for w in s.warnings), s.warnings
    hot = _cpu(tmp_path, "h1", "busy")  # the process read on the host over SSH
    assert len(hot) >= 3 and sum(hot) / len(hot) > 8.0, hot
    ssh_rows = s.hosts.filter(pl.col("source") == "ssh")
    assert ssh_rows["cpu_busy"].drop_nulls().len() > 0
    assert ssh_rows["mem_used"].drop_nulls().min() > 0  # type: ignore[operator]


async def test_no_exporter_and_no_ssh_is_a_named_warning(tmp_path: Path) -> None:
    dead = HostTarget(
        "h2",
        exporter="http://127.0.0.1:9/metrics",  # discard port: nothing listens
        address="127.0.0.1",
        ssh={"port": 9, "username": "root", "known_hosts": None},
    )
    await _sample(Sampler(tmp_path / "samples", [dead], 0.5), 4.5)
    s = read_samples(tmp_path)
    assert s.hosts.is_empty()
    texts = [w["text"] for w in s.warnings if w["code"] == "nothing-sampled"]
    assert texts == ["nothing sampled on h2: exporter down and no SSH"], s.warnings
    assert {"exporter-down", "ssh-failed"} <= {w["code"] for w in s.warnings}


SAMPLING_RUN = """
import sys, time
from pathlib import Path
from gridbench.hosts.sampling.sampler import HostTarget, Sampler
s = Sampler(Path(sys.argv[1]), [HostTarget("h1", exporter=sys.argv[2], address="127.0.0.1"),
                                HostTarget("local")], 0.2)
s.start()
time.sleep(60)
"""


def test_kill_9_leaves_the_samples_readable(tmp_path: Path, exporter: Exporter) -> None:  # noqa: F811
    folder = tmp_path / "samples"
    proc = subprocess.Popen([sys.executable, "-c", SAMPLING_RUN, str(folder), exporter.url])
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            n = [
                sum(1 for line in p.read_text().splitlines() if '"sample"' in line)
                for p in folder.glob("*.jsonl")
            ]
            if len(n) == 2 and min(n) >= 5:
                break
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        stop(proc)
    written = {p.stem: p.read_text() for p in folder.glob("*.jsonl")}
    s = read_samples(tmp_path)
    assert s.bad_lines == 0
    for host in ("h1", "local"):
        text = written[host]
        whole = text if text.endswith("\n") else text[: text.rfind("\n") + 1]  # a torn tail
        lines = [json.loads(x) for x in whole.splitlines() if x.strip()]
        got = s.hosts.filter(pl.col("host") == host)
        assert got.height == sum(1 for x in lines if x["kind"] == "sample") >= 5
