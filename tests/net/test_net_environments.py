"""The net environments (process, host, lan, relay), the gridbench relay, the process book
and cleanup after a killed run: real processes, namespaces, veth pairs and tbf (root).
Subnets 10.246.x are this file's own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from gridbench.errors import GridbenchError
from gridbench.messaging.cleanup import cleanup_run
from gridbench.messaging.environments import LanEnv, NetEnvironment
from gridbench.messaging.model import NetSpec
from gridbench.messaging.open_env import open_environment
from gridbench.messaging.processes import PROCESSES_FILE, RESOURCES_FILE, ProcessBook
from gridbench.messaging.transports.base import Address
from gridbench.messaging.transports.peer_process import PeerProcess, start_peer
from gridbench.store.layout import RunDir

#: a TCP peer: echoes (or, with "sink", counts bytes until EOF and answers the count);
#: READY <port> first; exits when its stdin closes
PEER = textwrap.dedent(
    """
    import os, socket, sys, threading
    host, mode = sys.argv[1], sys.argv[2]
    srv = socket.socket(); srv.bind((host, 0)); srv.listen(16)
    print("READY", srv.getsockname()[1], flush=True)
    def serve(c):
        with c:
            n = 0
            while data := c.recv(65536):
                n += len(data)
                if mode == "echo":
                    c.sendall(data)
            if mode == "sink":
                c.sendall(str(n).encode())
    def accept():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()
    os._exit(0)
    """
)


def spec(**kw: object) -> NetSpec:
    return NetSpec.model_validate({"name": "env-test", **kw})


def start_echo(env: NetEnvironment, tmp_path: Path, mode: str = "echo") -> PeerProcess:
    argv = [sys.executable, "-c", PEER, env.peer_host, mode]
    return start_peer(env.spawn, argv, f"{mode}-peer", tmp_path / f"{mode}.log", 15.0)


def echo(addr: Address, payload: bytes) -> bytes:
    with socket.create_connection((addr.host, addr.port), timeout=15) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got = bytearray()
        while chunk := s.recv(65536):
            got += chunk
    return bytes(got)


def rtt(addr: Address) -> float:
    """Seconds for one 1-byte round trip on a fresh connection (connect not timed)."""
    with socket.create_connection((addr.host, addr.port), timeout=15) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.perf_counter()
        s.sendall(b"x")
        assert s.recv(1) == b"x"
        return time.perf_counter() - t0


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {ln.split()[0] for ln in out.splitlines() if ln.strip()}


def link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", "dev", name], capture_output=True).returncode == 0


def test_host_carries_echo_and_books_the_peer(tmp_path: Path) -> None:
    book = ProcessBook(tmp_path)
    payload = os.urandom(200_000)
    with open_environment("host", spec(), tmp_path / "w", book) as env:
        assert (env.name, env.in_process, env.peer_host) == ("host", False, "127.0.0.1")
        peer = start_echo(env, tmp_path)
        target = Address(env.peer_host, peer.port)
        assert env.route(target) == target
        assert echo(target, payload) == payload
        pid = peer.proc.pid
        assert os.getpgid(pid) == pid  # a session of its own
    assert peer.proc.poll() is not None  # close stopped it
    rows = [json.loads(x) for x in (tmp_path / PROCESSES_FILE).read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["pid"] == pid and rows[0]["role"] == "echo-peer"
    assert rows[0]["run"] == tmp_path.name and isinstance(rows[0]["create_time"], float)


def test_process_spawns_nothing(tmp_path: Path) -> None:
    with open_environment("process", spec(), tmp_path, ProcessBook(tmp_path)) as env:
        assert env.in_process and env.peer_host == "127.0.0.1"
        with pytest.raises(GridbenchError, match="nothing is spawned"):
            env.spawn(["true"], "x", tmp_path / "x.log")
        assert env.route(Address("127.0.0.1", 5)) == Address("127.0.0.1", 5)
    assert not (tmp_path / PROCESSES_FILE).exists()


def test_lan_goes_through_the_namespace(tmp_path: Path) -> None:
    book = ProcessBook(tmp_path)
    payload = os.urandom(300_000)
    with open_environment("lan", spec(lan={"subnet": "10.246.1"}), tmp_path / "w", book) as env:
        assert env.peer_host == env.floor_host == "10.246.1.2"
        assert isinstance(env, LanEnv)
        ns = env.ns
        assert ns in netns_names()
        inside = subprocess.run(
            ["ip", "netns", "exec", ns, "ip", "-o", "-4", "addr"], capture_output=True, text=True
        ).stdout
        assert "10.246.1.2/24" in inside
        peer = start_echo(env, tmp_path)
        # the peer really lives in another network namespace
        assert os.readlink(f"/proc/{peer.proc.pid}/ns/net") != os.readlink("/proc/self/ns/net")
        assert echo(Address(env.peer_host, peer.port), payload) == payload
        assert any("unshaped" in n for n in env.notes)
    assert ns not in netns_names() and not link_exists(f"{ns}h")
    kinds = [json.loads(x)["kind"] for x in (tmp_path / RESOURCES_FILE).read_text().splitlines()]
    assert kinds == ["netns", "link"]


def test_lan_tbf_limits_the_rate(tmp_path: Path) -> None:
    size = 2_000_000
    s = spec(lan={"subnet": "10.246.2", "rate": "10mbit"})
    with open_environment("lan", s, tmp_path / "w", ProcessBook(tmp_path)) as env:
        assert isinstance(env, LanEnv)
        ns = env.ns
        qd = subprocess.run(
            ["tc", "qdisc", "show", "dev", f"{ns}h"], capture_output=True, text=True
        )
        assert "tbf" in qd.stdout and "10Mbit" in qd.stdout
        peer = start_echo(env, tmp_path, "sink")
        t0 = time.perf_counter()
        got = echo(Address(env.peer_host, peer.port), b"\0" * size)
        elapsed = time.perf_counter() - t0
    assert int(got) == size
    # 16 Mbit at 10 Mbit/s, less a 256 kB burst: a shaped link cannot be faster than ~1.4 s
    assert elapsed >= 1.3


def test_lan_delay_is_refused_without_netem(tmp_path: Path) -> None:
    s = spec(lan={"subnet": "10.246.3", "delay": 0.01})
    book = ProcessBook(tmp_path)
    with pytest.raises(GridbenchError) as info, open_environment("lan", s, tmp_path / "w", book):
        pytest.fail("a lan with a delay opened on a kernel without netem")
    assert "netem" in str(info.value) and "remove lan.delay" in str(info.value)
    # nothing is left behind
    names = [json.loads(x)["name"] for x in (tmp_path / RESOURCES_FILE).read_text().splitlines()]
    assert names and not netns_names() & set(names)
    assert not any(link_exists(n) for n in names if n.endswith("h"))


def test_lan_needs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    book = ProcessBook(tmp_path)
    with (
        pytest.raises(GridbenchError, match="needs root") as info,
        open_environment("lan", spec(), tmp_path, book),
    ):
        pass
    assert info.value.fix and "root" in info.value.fix


def test_relay_socat_forwards(tmp_path: Path) -> None:
    payload = os.urandom(100_000)
    s = spec(environments=["relay"], relay={"tool": "socat"})
    with open_environment("relay", s, tmp_path / "w", ProcessBook(tmp_path)) as env:
        peer = start_echo(env, tmp_path)
        target = Address(env.peer_host, peer.port)
        via = env.route(target)
        assert via != target and env.route(target) == via  # one forwarder per target
        assert echo(via, payload) == payload
        assert echo(via, b"again") == b"again"  # fork: more than one connection
    assert len((tmp_path / PROCESSES_FILE).read_text().splitlines()) == 2


def test_relay_missing_socat_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    book = ProcessBook(tmp_path)
    with (
        pytest.raises(GridbenchError, match="socat is not installed") as info,
        open_environment("relay", spec(), tmp_path / "w", book),
    ):
        pass
    assert info.value.fix and "apt-get install socat" in info.value.fix


def test_gridbench_relay_adds_its_delay(tmp_path: Path) -> None:
    s = spec(environments=["relay"], relay={"tool": "gridbench", "delay": 0.02})
    with open_environment("relay", s, tmp_path / "w", ProcessBook(tmp_path)) as env:
        peer = start_echo(env, tmp_path)
        via = env.route(Address(env.peer_host, peer.port))
        # 20 ms held each way: no round trip through it can be shorter than 40 ms
        assert min(rtt(via) for _ in range(3)) >= 0.04
        payloads = [os.urandom(50_000 + i) for i in range(6)]
        assert [echo(via, p) for p in payloads] == payloads
        assert any("gridbench forwarder" in n for n in env.notes)


def test_gridbench_relay_many_connections(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    s = spec(environments=["relay"], relay={"tool": "gridbench"})
    with open_environment("relay", s, tmp_path / "w", ProcessBook(tmp_path)) as env:
        peer = start_echo(env, tmp_path)
        via = env.route(Address(env.peer_host, peer.port))
        payloads = [os.urandom(1000 * (i + 1)) for i in range(16)]
        with ThreadPoolExecutor(16) as pool:
            assert list(pool.map(lambda p: echo(via, p), payloads)) == payloads


KILLED_RUN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from gridbench.messaging.open_env import open_environment
    from gridbench.messaging.model import NetSpec
    from gridbench.messaging.processes import ProcessBook
    from gridbench.store.spawned import mark_run
    run = Path(sys.argv[1])
    mark_run(run)  # as the net runner does once the run folder exists
    spec = NetSpec(name="killed", environments=["lan", "host"], lan={"subnet": "10.246.4"})
    book = ProcessBook(run)
    stubborn = [sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"]
    with open_environment("lan", spec, run / "lan", book) as lan, \\
            open_environment("host", spec, run / "host", book) as host:
        lan.spawn(stubborn, "stubborn-peer", run / "stubborn.log")
        host.spawn(["sleep", "120"], "sleeper", run / "sleeper.log")
        print("UP", lan.ns, flush=True)
        time.sleep(120)
    """
)


def _ignores_sigterm(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGTERM (its SigIgn mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def test_cleanup_after_kill9(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    planted = subprocess.Popen(["sleep", "60"])
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("UP"):
            proc.kill()
            pytest.fail(
                f"the run did not start: {line!r}\n{proc.communicate()[1].decode()[-2000:]}"
            )
        ns = line.split()[1]
        proc.kill()
        proc.wait(10)
        book = [json.loads(x) for x in (run / PROCESSES_FILE).read_text().splitlines()]
        pids = [b["pid"] for b in book]
        assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)
        # "UP" comes right after the spawn: on a loaded machine the stubborn peer may not
        # have set its SIGTERM handler yet, and would die of the SIGTERM this test expects
        # it to ignore
        (stubborn,) = [b["pid"] for b in book if b.get("role") == "stubborn-peer"]
        deadline = time.monotonic() + 30
        while not _ignores_sigterm(stubborn):
            assert time.monotonic() < deadline, "the stubborn peer never ignored SIGTERM"
            time.sleep(0.05)
        # a planted pid (recorded with a wrong start time) and planted resource names
        with (run / PROCESSES_FILE).open("a") as fh:
            ct = psutil.Process(planted.pid).create_time() - 5
            fh.write(json.dumps({"pid": planted.pid, "create_time": ct, "role": "x"}) + "\n")
            fh.write("{not json\n")
        with (run / RESOURCES_FILE).open("a") as fh:
            fh.write(json.dumps({"kind": "link", "name": "lo"}) + "\n")
            fh.write(json.dumps({"kind": "netns", "name": "gbn-00000000"}) + "\n")

        dry = cleanup_run(RunDir(run), dry_run=True, force=False)
        assert sum("would stop" in x for x in dry.lines) == 2
        assert any(f"netns {ns}: would run netns delete {ns}" in x for x in dry.lines)
        assert all(psutil.pid_exists(p) for p in pids) and ns in netns_names()

        out = cleanup_run(RunDir(run), dry_run=False, force=False)
        text = "\n".join(out.lines)
        assert "stubborn-peer): stopped (SIGKILL)" in text
        assert "sleeper): stopped" in text
        assert f"pid {planted.pid} (x): not ours" in text
        assert f"netns {ns}: removed" in text and "netns gbn-00000000: already gone" in text
        assert any("'lo': not a gridbench name" in e for e in out.errors)
        assert any("not valid JSON" in e for e in out.errors)
        assert ns not in netns_names() and not link_exists(f"{ns}h") and link_exists("lo")
        for p in pids:
            assert not psutil.pid_exists(p) or psutil.Process(p).status() == "zombie"
        assert planted.poll() is None  # the unrelated process was left alone

        again = cleanup_run(RunDir(run), dry_run=False, force=False)
        assert sum("already gone" in x for x in again.lines) >= 3
    finally:
        planted.kill()
        planted.wait()
        if proc.poll() is None:
            proc.kill()


def test_cleanup_after_a_normal_run_has_nothing_to_do(tmp_path: Path) -> None:
    book = ProcessBook(tmp_path)
    with open_environment("lan", spec(lan={"subnet": "10.246.5"}), tmp_path / "w", book) as env:
        start_echo(env, tmp_path)
    out = cleanup_run(RunDir(tmp_path), dry_run=False, force=False)
    assert not out.errors
    assert len(out.lines) == 3 and all("already gone" in x for x in out.lines)
