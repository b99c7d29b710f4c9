"""The adversarial pass over the samplers (issue 41), over SSH: a real sshd on loopback runs
a "python" that is not the probe. It prints a good line, one whose clock reads the year
2286, one with process rows that are not the probe's, a line cut in the middle, and dies
with a message. The real :class:`Sampler` reads it."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from gridbench.hosts.sampling.analysis import read_samples
from gridbench.hosts.sampling.sampler import HostTarget, Sampler
from sampling_fixtures import Sshd, sample_for, sshd  # noqa: F401

FAKE_PROBE = """
import json, sys, time

def line(n, host_t, processes=()):
    counters = {
        "cpu_seconds": {"user": 10.0 + n, "idle": 100.0 + n},
        "ncpu": 1,
        "mem_total": 1000.0,
        "mem_available": 400.0,
        "net_rx": 1000.0 * n,
        "host_t": host_t,
    }
    print(json.dumps({"counters": counters, "processes": list(processes)}), flush=True)
    time.sleep(0.3)

line(1, time.time())
line(2, time.time())
line(3, 1.0e10)  # the year 2286
line(4, time.time(), [{"label": "x" * 5000, "state": "running"}, "junk"])
line(5, time.time())
sys.stdout.write('{"counters": {"cpu_sec')  # cut mid-line
sys.stdout.flush()
print("probe died: out of memory", file=sys.stderr, flush=True)
sys.exit(3)
"""


async def test_a_probe_that_lies_and_dies_is_named_and_its_good_lines_kept(
    tmp_path: Path,
    sshd: Sshd,  # noqa: F811
) -> None:
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!{sys.executable}\n{FAKE_PROBE}")
    fake.chmod(0o755)
    host = HostTarget("liar", address="127.0.0.1", ssh=sshd.options(), python=str(fake))
    t0 = time.time()
    await sample_for(Sampler(tmp_path / "samples", [host], 0.3), 4.0)
    s = read_samples(tmp_path)
    warned = {w["code"]: w["text"] for w in s.warnings}
    assert "clock-absurd" in warned and "1e+10" in warned["clock-absurd"], s.warnings
    assert "2 process row(s) not its own" in warned.get("probe-malformed", ""), s.warnings
    assert "probe died: out of memory" in warned.get("probe-stopped", ""), s.warnings
    rows = s.hosts.filter(pl.col("source") == "ssh")
    assert rows.height >= 3, rows
    assert rows["t"].min() >= t0 - 1 and rows["t"].max() <= time.time() + 1  # type: ignore[operator]
    assert rows["cpu_busy"].drop_nulls().len() >= 3
    assert s.bad_lines == 0  # the cut line was never written


ENDLESS = """
import sys, time
sys.stdout.write("x" * (8 * 1024 * 1024))  # past SSH's window, and no newline
sys.stdout.flush()
time.sleep(30)
"""
NOT_TEXT = """
import sys, time
sys.stdout.buffer.write(b"\\xff\\xfe\\x00garbage\\n")
sys.stdout.flush()
time.sleep(30)
"""
NOT_AN_OBJECT = """
import sys, time
print("12345", flush=True)
time.sleep(30)
"""


@pytest.mark.parametrize(
    ("body", "printed"),
    [(ENDLESS, "'xxxx"), (NOT_TEXT, "'\\xff\\xfe\\x00garbage"), (NOT_AN_OBJECT, "'12345")],
    ids=["endless line", "not text", "not an object"],
)
async def test_hosts_check_names_a_python_that_prints_garbage(
    tmp_path: Path,
    sshd: Sshd,  # noqa: F811
    body: str,
    printed: str,
) -> None:
    # before: each ended in "clock: no answer within 15 s" (the check read the endless
    # line's first 2 MiB, then waited for the still running remote's stderr to end), or
    # "cannot log in: 'utf-8' codec can't decode", or an AttributeError's traceback
    from gridbench.hosts.check import SSH_TIMEOUT_S, check_host
    from gridbench.hosts.inventory import Host

    fake = tmp_path / "fake-python"
    fake.write_text(f"#!{sys.executable}\n{body}")
    fake.chmod(0o755)
    host = Host(name="odd", address="127.0.0.1", ssh=sshd.options(), python=str(fake))
    t0 = time.monotonic()
    row = await asyncio.wait_for(check_host(host), SSH_TIMEOUT_S + 5)
    assert time.monotonic() - t0 < SSH_TIMEOUT_S / 2
    assert [s.name for s in row.steps] == ["ssh", "python"], row.steps
    step = row.steps[-1]
    assert not step.ok and f"did not run: it printed b{printed}" in step.detail, step
    assert len(step.detail) <= 300 and "set python:" in step.fix
