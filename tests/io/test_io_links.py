"""Link speed, as the seed compared a 100 Mbit client with a 1 Gbit one: the same sshfs
target reached over a veth pair into a network namespace shaped by tc (tbf) to 100 Mbit
and to 1 Gbit. Added latency needs tc's netem qdisc: where the kernel lacks it, that test
is skipped with the reason."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.runner import IoRunner
from io_fixtures import ShapedLinks, shaped_links

MBIT100_KBPS = 100e6 / 8 / 1024  # 12207 kB/s


@pytest.fixture
def links(tmp_path: Path) -> Iterator[ShapedLinks]:
    yield from shaped_links(tmp_path, {"slow": "100mbit", "fast": "1gbit"})


def test_100mbit_against_1gbit(tmp_path: Path, links: ShapedLinks) -> None:
    # include_flush (iozone -e): sshfs acknowledges writes before they cross the link, so
    # without the final fsync an 8 MiB write "runs" at ~16 MB/s over a 12 MB/s link
    spec, data = load_io_spec_text(
        f"name: links\ntargets:\n  - {{name: fast, path: {links.mounts['fast']}}}\n"
        f"  - {{name: slow, path: {links.mounts['slow']}}}\nbaseline: fast\nrepetitions: 2\n"
        "cache: drop_caches\niozone: {file_size: 8M, record_size: 128k, tests: [write, read], "
        "include_flush: true}\n"
    )
    m = analyze_and_write(IoRunner(spec, data, tmp_path / "results").execute())
    cell = {(e["target"], e["test"]): e for e in m["matrix"]}
    for (target, test), e in sorted(cell.items()):  # the figures, for the record (pytest -s)
        print(f"{target:5s} {test:6s} {e['kbps']['mean']:9.0f} kB/s  speedup {e['speedup']}")
    for test in ("write", "read"):
        slow = cell[("slow", test)]
        # the shaped link caps the figure (a little head room for tbf's burst)
        assert slow["kbps"]["mean"] < MBIT100_KBPS * 1.15, slow
        assert slow["speedup"] is not None and slow["speedup"] < -0.2, slow
        assert cell[("fast", test)]["kbps"]["mean"] > MBIT100_KBPS * 1.2
    assert all(not any(p.iterdir()) for p in links.served.values())


def test_added_latency_with_netem(tmp_path: Path, links: ShapedLinks) -> None:
    dev = links.host_dev["fast"]
    r = subprocess.run(
        ["tc", "qdisc", "replace", "dev", dev, "root", "netem", "delay", "20ms"],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(
            f"tc netem is not available here, so no added-latency comparison: {r.stderr.strip()}"
        )
    spec, data = load_io_spec_text(
        f"name: latency\ntargets:\n  - {{name: slow, path: {links.mounts['slow']}}}\n"
        f"  - {{name: delayed, path: {links.mounts['fast']}}}\nbaseline: slow\nrepetitions: 1\n"
        "cache: drop_caches\niozone: {file_size: 1M, record_size: 128k, tests: [random_read]}\n"
    )
    m = analyze_and_write(IoRunner(spec, data, tmp_path / "results").execute())
    delayed = next(e for e in m["matrix"] if e["target"] == "delayed")
    assert delayed["lat_ms"]["p50"] >= 20.0  # every read waits for the added delay
