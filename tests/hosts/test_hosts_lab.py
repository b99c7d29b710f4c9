"""``gridbench lab`` and ``gridbench hosts check`` on a real lab of three hosts (network
namespaces on a bridge, sshd and node_exporter each, tc tbf and Toxiproxy), made and
removed by this module. Root only: the lab refuses without it (tested), the suite runs as
root. Nothing here is skipped: a lab that cannot start fails with its log's tail.

Every target of traffic is an address of the lab's own namespaces."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from ruamel.yaml import YAML

from gridbench.hosts.inventory import Inventory, load_inventory
from gridbench.hosts.lab.book import STATE_ROOT

REPO = Path(__file__).resolve().parents[2]
RATE_MBIT = 20
DELAY_MS = 50
ECHO_PORT = 7000
CMD_TIMEOUT = 120


def gridbench(*args: str, timeout: float = CMD_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gridbench.cli", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,  # no terminal: cleanup asks for --yes
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "250"},  # a table's rows on one line each
    )


def _toxiproxy() -> None:
    """The Toxiproxy the lab's latency paths need (installed as scripts/test does)."""
    r = subprocess.run(
        [str(REPO / "scripts" / "install-toxiproxy")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if r.returncode != 0:
        pytest.fail(f"scripts/install-toxiproxy failed:\n{r.stderr[-3000:]}")


def new_name() -> str:
    return "t" + secrets.token_hex(3)


def traces(name: str) -> dict[str, Any]:
    """What of lab ``name`` exists on this machine: namespaces, links, its folder."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False)
    return {
        "netns": [ln.split()[0] for ln in ns.stdout.splitlines() if f"gbl-{name}-" in ln],
        "links": re.findall(rf"\d+: (gbl{name}[^:@ ]*)", links.stdout),
        "folder": (STATE_ROOT / name).exists(),
    }


def live(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def recorded_pids(name: str) -> list[int]:
    state = json.loads((STATE_ROOT / name / "state.json").read_text())
    return [r["pid"] for r in state["resources"] if r["kind"] == "process"]


def nothing_left(name: str, pids: list[int]) -> None:
    assert traces(name) == {"netns": [], "links": [], "folder": False}
    assert live(pids) == []


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[str, Inventory, Path]]:
    """A lab of 3 hosts, each link shaped to 20 Mbit/s, 50 ms to lab-2's port 7000."""
    _toxiproxy()
    name = new_name()
    r = gridbench(
        "lab",
        "up",
        "--name",
        name,
        "--hosts",
        "3",
        "--rate",
        f"{RATE_MBIT}mbit",
        "--latency",
        f"{name}-2:{ECHO_PORT}:{DELAY_MS}ms",
    )
    if r.returncode != 0:
        gridbench("lab", "down", "--name", name)
        pytest.fail(f"lab up failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    path = STATE_ROOT / name / "inventory.yaml"
    pids = recorded_pids(name)
    try:
        yield name, load_inventory(path), path
    finally:
        down = gridbench("lab", "down", "--name", name)
        assert down.returncode == 0, down.stdout + down.stderr
        nothing_left(name, pids)


def test_lab_up_then_down_leaves_nothing() -> None:
    name = new_name()
    t0 = time.monotonic()
    r = gridbench("lab", "up", "--name", name, "--hosts", "2")
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    pids = recorded_pids(name)
    assert len(live(pids)) == 4  # sshd and node_exporter on each host
    found = traces(name)
    assert len(found["netns"]) == 2 and found["folder"]
    assert f"{name}-1: namespace gbl-{name}-1" in r.stdout  # progress lines
    st = gridbench("lab", "status", "--name", name)
    assert st.returncode == 0 and "sshd, node_exporter running" in st.stdout
    r = gridbench("lab", "down", "--name", name)
    assert r.returncode == 0, r.stdout + r.stderr
    nothing_left(name, pids)
    assert took < 30
    r = gridbench("lab", "down", "--name", name)  # nothing more to remove: one clear error
    assert r.returncode == 2 and f"no lab named {name!r}" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_killed_lab_up_is_removed_by_cleanup() -> None:
    name = new_name()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gridbench.cli", "lab", "up", "--name", name, "--hosts", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
    )
    seen = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in proc.stdout:  # midway: two hosts made, two to go
            seen.append(line)
            if line.startswith(f"{name}-2:") or time.monotonic() > deadline:
                break
        proc.kill()
    finally:
        proc.kill()
        proc.wait(30)
    assert any(s.startswith(f"{name}-2:") for s in seen), "".join(seen)
    pids = recorded_pids(name)
    assert live(pids) and traces(name)["netns"]  # the killed lab left things behind
    st = gridbench("lab", "status", "--name", name)
    assert st.returncode == 1 and "incomplete" in st.stdout
    # 'gridbench cleanup --lab': shown first; with no terminal and no --yes, nothing done
    r = gridbench("cleanup", "--lab", name)
    assert r.returncode == 2 and "--yes" in r.stderr and "Traceback" not in r.stderr
    assert "incomplete" in r.stdout and live(pids)
    r = gridbench("cleanup", "--lab", name, "--yes")
    assert r.returncode == 0 and f"lab {name} removed" in r.stdout, r.stdout + r.stderr
    nothing_left(name, pids)


def test_lab_up_without_root_is_one_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gridbench.cli import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # not root, as a user's shell
    name = new_name()
    assert main(["lab", "up", "--name", name]) == 2
    err = capsys.readouterr().err
    assert "needs root" in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("error")]) == 1
    assert traces(name) == {"netns": [], "links": [], "folder": False}


def test_hosts_check_reaches_every_lab_host(lab: tuple[str, Inventory, Path]) -> None:
    name, inv, path = lab
    assert [h.name for h in inv.hosts.values()] == [f"{name}-{k}" for k in (1, 2, 3)]
    r = gridbench("hosts", "check", str(path), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 of 3 hosts ready" in r.stdout
    assert r.stdout.count("node_ series") == 3
    r = gridbench("check", str(path), timeout=60)  # the top-level check finds an inventory
    assert r.returncode == 0 and "3 of 3 hosts ready" in r.stdout, r.stdout + r.stderr


def _wrong_key(tmp_path: Path, inv: Inventory) -> Path:
    key = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    data = {"hosts": {n: h.model_dump(exclude={"name"}) for n, h in inv.hosts.items()}}
    first = next(iter(data["hosts"].values()))
    first["ssh"] = {**first["ssh"], "client_keys": [str(key)]}
    first["exporter"] = None
    out = tmp_path / "wrong.yaml"
    with out.open("w") as f:
        YAML(typ="safe").dump({"hosts": {next(iter(data["hosts"])): first}}, f)
    return out


def test_a_wrong_key_is_one_error_line(lab: tuple[str, Inventory, Path], tmp_path: Path) -> None:
    _, inv, _ = lab
    r = gridbench("hosts", "check", str(_wrong_key(tmp_path, inv)), timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    fails = [ln for ln in r.stdout.splitlines() if ": ssh: " in ln]
    assert len(fails) == 1 and "refused the key" in fails[0], r.stdout


def test_an_unknown_host_is_one_error(lab: tuple[str, Inventory, Path], tmp_path: Path) -> None:
    name, _, path = lab
    # a name the inventory does not have: a did-you-mean, before anything is reached
    r = gridbench("hosts", "check", str(path), "--host", f"{name}2")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"did you mean '{name}-2'?" in r.stderr
    # an address nothing answers at (an unused address of the lab's own /24)
    addr = load_inventory(path).hosts[f"{name}-1"].address.rsplit(".", 1)[0] + ".200"
    one = tmp_path / "gone.yaml"
    one.write_text(f"hosts:\n  gone:\n    address: {addr}\n    ssh: {{connect_timeout: 2}}\n")
    r = gridbench("hosts", "check", str(one), timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    fails = [ln for ln in r.stdout.splitlines() if ln.startswith("gone: ssh: ")]
    assert len(fails) == 1, r.stdout


def test_a_shaped_link_is_measured_by_iperf3(lab: tuple[str, Inventory, Path]) -> None:
    name, inv, _ = lab
    host = inv.hosts[f"{name}-2"]
    assert host.netns and shutil.which("iperf3")
    server = subprocess.Popen(
        ["ip", "netns", "exec", host.netns, "iperf3", "-s", "-1", "-B", host.address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(host.netns, 5201)
        r = subprocess.run(
            ["iperf3", "-c", host.address, "-t", "4", "-J"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    finally:
        server.kill()
        server.wait(10)
    mbit = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
    print(f"iperf3 through a {RATE_MBIT} Mbit/s link: {mbit:.2f} Mbit/s")
    assert abs(mbit - RATE_MBIT) <= 0.1 * RATE_MBIT


ECHO = (
    "import socket,sys\n"
    "s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
    "s.bind((sys.argv[1],int(sys.argv[2])));s.listen();s.settimeout(30)\n"
    "c,_=s.accept();c.setsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY,1);c.settimeout(30)\n"
    "while (d:=c.recv(64)): c.sendall(d)\n"
)


def test_a_toxiproxy_latency_is_measured_by_a_ping_pong(
    lab: tuple[str, Inventory, Path],
) -> None:
    name, inv, _ = lab
    host = inv.hosts[f"{name}-2"]
    assert host.netns and ECHO_PORT in host.proxies
    server = subprocess.Popen(
        ["ip", "netns", "exec", host.netns, sys.executable, "-c", ECHO, host.address, "7000"],
    )
    try:
        _wait_port(host.netns, ECHO_PORT)
        via, port = host.proxies[ECHO_PORT].rsplit(":", 1)
        rtts = []
        with socket.create_connection((via, int(port)), timeout=10) as c:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(40):
                t0 = time.perf_counter()
                c.sendall(b"x")
                assert c.recv(64) == b"x"
                rtts.append((time.perf_counter() - t0) * 1000)
    finally:
        server.kill()
        server.wait(10)
    # the lower fifth: the path's own round trip, without the scheduling delays a busy
    # 2-core machine adds to some probes (they only ever add)
    low = statistics.quantiles(rtts, n=5)[0]
    print(
        f"ping-pong through a {DELAY_MS} ms Toxiproxy path: 20th percentile {low:.2f} ms, "
        f"median {statistics.median(rtts):.2f} ms, min {min(rtts):.2f} ms"
    )
    assert abs(low - DELAY_MS) <= 0.1 * DELAY_MS
    assert min(rtts) >= 0.9 * DELAY_MS


def _wait_port(netns: str, port: int) -> None:
    """Until something listens on ``port`` in ``netns`` (seen by ss, not dialled: the
    servers here serve one connection)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r = subprocess.run(
            ["ss", "-N", netns, "-Htln", f"sport = :{port}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if r.stdout.strip():
            return
        time.sleep(0.05)
    pytest.fail(f"nothing listens on port {port} in {netns} after 10 s")
