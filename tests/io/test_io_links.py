"""Link speed, as the seed compared a 100 Mbit client with a 1 Gbit one: sshfs targets
served by lab hosts (``gridbench lab up``: a network namespace each, with its own sshd,
its link shaped both ways by tc tbf). The lab's ``--rate`` is one rate for all its hosts,
so the two links are two labs' hosts: the session's lab (1 Gbit/s, tests/lab_fixtures.py)
and this module's one-host lab at 100 Mbit/s. Added latency comes from the session lab's
Toxiproxy path to its host 3's ssh (this kernel has no netem)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.runner import IoRunner
from io_fixtures import mount_sshfs, unmount_sshfs
from lab_fixtures import LATENCY_MS, Lab, made_lab

MBIT100_KBPS = 100e6 / 8 / 1024  # 12207 kB/s


@dataclass
class Links:
    """sshfs mounts, each of a served directory through one lab host's sshd."""

    mounts: dict[str, Path]  # link name -> sshfs mount
    served: dict[str, Path]


@pytest.fixture(scope="module")
def slow_lab() -> Iterator[Lab]:
    """A lab of one host whose link is shaped to 100 Mbit/s both ways."""
    with made_lab("io", 1, rate="100mbit") as made:
        yield made


@contextlib.contextmanager
def _links(tmp_path: Path, over: dict[str, tuple[str, int, Path]]) -> Iterator[Links]:
    """One sshfs mount per entry of ``over`` (name -> address, port, key), unmounted after."""
    mounts: dict[str, Path] = {}
    served: dict[str, Path] = {}
    with contextlib.ExitStack() as stack:
        for name, (addr, port, key) in over.items():
            served[name] = tmp_path / f"served-{name}"
            served[name].mkdir()
            mnt = tmp_path / f"mnt-{name}"
            mnt.mkdir()
            m = mount_sshfs(f"root@{addr}:{served[name]}", mnt, port, key, tmp_path / f"{name}.log")
            stack.callback(unmount_sshfs, m)
            mounts[name] = m.mount
        yield Links(mounts, served)


@pytest.fixture
def links(tmp_path: Path, lab: Lab, slow_lab: Lab) -> Iterator[Links]:
    """slow: the 100 Mbit/s lab's host; fast: the session lab's host 3 (1 Gbit/s)."""
    slow, fast = slow_lab.host(1), lab.host(3)
    with _links(
        tmp_path,
        {"slow": (slow.address, 22, slow_lab.key), "fast": (fast.address, 22, lab.key)},
    ) as made:
        yield made


def test_100mbit_against_1gbit(tmp_path: Path, links: Links) -> None:
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


def test_added_latency_through_toxiproxy(tmp_path: Path, lab: Lab, slow_lab: Lab) -> None:
    host = lab.host(3)
    via, port = host.proxies[22].rsplit(":", 1)  # host 3's sshd, LATENCY_MS round trip more
    slow = slow_lab.host(1)
    with _links(
        tmp_path,
        {"slow": (slow.address, 22, slow_lab.key), "delayed": (via, int(port), lab.key)},
    ) as links:
        spec, data = load_io_spec_text(
            f"name: latency\ntargets:\n  - {{name: slow, path: {links.mounts['slow']}}}\n"
            f"  - {{name: delayed, path: {links.mounts['delayed']}}}\nbaseline: slow\n"
            "repetitions: 1\ncache: drop_caches\n"
            "iozone: {file_size: 1M, record_size: 128k, tests: [random_read]}\n"
        )
        m = analyze_and_write(IoRunner(spec, data, tmp_path / "results").execute())
    delayed = next(e for e in m["matrix"] if e["target"] == "delayed")
    print(f"delayed random_read p50 {delayed['lat_ms']['p50']:.2f} ms")
    assert delayed["lat_ms"]["p50"] >= LATENCY_MS  # every read waits for the added delay
