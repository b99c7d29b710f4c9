"""Concurrent clients: N fio jobs on one host (same file and separate files), and fio's
own client/server mode against two ``fio --server`` instances on loopback ports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.runner import IoRunner
from io_fixtures import FioServer, fio_servers  # noqa: F401 (fixture)

SPEC = """\
name: conc
targets: [{{name: t, path: {path}}}]
repetitions: 1
cache: none
iozone: {{enabled: false, file_size: 1M, record_size: 64k}}
concurrency:
  {{enabled: true, clients: [1, 2, 3], files: {files}, tests: [write, read], servers: {servers}}}
"""


def _run(tmp_path: Path, files: str, servers: list[str]) -> dict[str, object]:
    d = tmp_path / f"t-{files}-{len(servers)}"
    d.mkdir()
    spec, data = load_io_spec_text(SPEC.format(path=d, files=files, servers=json.dumps(servers)))
    runner = IoRunner(spec, data, tmp_path / "results")
    run = runner.execute()
    assert list(d.iterdir()) == []  # cleaned up
    return analyze_and_write(run)


@pytest.mark.parametrize("files", ["same", "separate"])
def test_local_clients(tmp_path: Path, files: str) -> None:
    m = _run(tmp_path, files, [])
    conc = {(c["test"], c["clients"]): c for c in m["concurrency"]}  # type: ignore[attr-defined]
    assert set(conc) == {(t, n) for t in ("write", "read") for n in (1, 2, 3)}
    for (_test, n), c in conc.items():
        assert c["files"] == files
        assert len(c["per_client_kbps"]) == n  # one figure per client
        assert c["last_done_kbps"]["mean"] > 0
        first = c["first_done_kbps"]["mean"]
        # the first-done estimate is the sum of exactly these n clients' rates (an
        # aggregate row or another run's client mixed in would break it)
        assert first == pytest.approx(sum(c["per_client_kbps"].values()))


def test_fio_client_server(tmp_path: Path, fio_servers: list[FioServer]) -> None:  # noqa: F811
    m = _run(tmp_path, "separate", [s.address for s in fio_servers])
    conc = {(c["test"], c["clients"]): c for c in m["concurrency"]}  # type: ignore[attr-defined]
    for (_test, n), c in conc.items():
        # 3 clients over 2 servers: 2 + 1 jobs, each reported with its host
        assert len(c["per_client_kbps"]) == n, c["per_client_kbps"]
        assert all(k.startswith("127.0.0.1/") for k in c["per_client_kbps"])
        assert c["last_done_kbps"]["mean"] > 0
    for s in fio_servers:
        assert s.proc.poll() is None  # the servers are still up for the next run


@pytest.mark.parametrize("files", ["separate", "same"])
def test_phases_clean_up_and_servers_use_distinct_files(
    tmp_path: Path,
    fio_servers: list[FioServer],  # noqa: F811
    files: str,
) -> None:
    """3 clients over 2 servers sharing one directory: with separate files every client
    has its own file (no two servers write the same name); the iozone file is gone before
    the concurrency phase starts (so the free-space check needs only the largest phase)."""
    d = tmp_path / "shared"
    d.mkdir()
    servers = json.dumps([s.address for s in fio_servers])
    text = (
        f"name: c\ntargets: [{{name: t, path: {d}}}]\nrepetitions: 1\ncache: none\n"
        "iozone: {file_size: 1M, record_size: 64k, tests: [write]}\n"
        f"concurrency: {{enabled: true, clients: [3, 1], files: {files}, tests: [write], "
        f"servers: {servers}}}\n"
    )
    spec, data = load_io_spec_text(text)
    seen: dict[str, list[str]] = {}

    def progress(msg: str) -> None:
        # called before each step: the files the previous step left behind
        seen[msg] = sorted(p.name for wd in d.iterdir() for p in wd.iterdir())

    IoRunner(spec, data, tmp_path / "results", progress=progress).execute()
    before_conc = seen["t rep 1: 3 clients write"]
    assert not [f for f in before_conc if "gridbench-" in f], before_conc
    # fio's client mode prefixes every name with the server's host (127.0.0.1. here)
    after_three = [f for f in seen["t rep 1: 1 clients write"] if "gridbench-conc" in f]
    assert len(after_three) == (3 if files == "separate" else 1), after_three
    assert all(f.startswith("127.0.0.1.") for f in after_three)
    assert list(d.iterdir()) == []
