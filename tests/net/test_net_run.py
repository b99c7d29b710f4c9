"""``gridbench net`` end to end: real peers, real sockperf/iperf3/socat/sshd/MUSCLE3, the
CLI, the store, and the faults the issue names (a peer killed mid-test, the run killed
with -9 then ``cleanup``, a relay whose delay must be flagged as overhead)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from conftest import BIN, cli_env
from gridbench.errors import SpecError
from gridbench.messaging.load import load_net_spec_text
from gridbench.messaging.plan import check_memory
from gridbench.messaging.runner import NetRunner
from gridbench.store.layout import RunDir
from gridbench.store.records import read_records

QUICK = """\
name: net-e2e
environments: [process, host]
pingpong:
  transports: [tcp, zmq]
  sizes: {list: [0, 1k, 64k]}
  tests: 3
  round_trips: 5
echo:
  transports: [grpc]
  configs: [inprocess, network, tls]
  calls: [20, 40]
  repetitions: 2
  clients: [1, 2, 3]
  client_calls: 10
  scale_repetitions: 1
burst: {transport: grpc, calls: 200, repetitions: 2}
transfer:
  tools: [tcp_streams, zmq, scp]
  size: 2M
  repetitions: 2
  streams: 2
floor: {duration: 0.5s, iperf3_streams: 2}
test_timeout: 30s
"""


def gridbench(results: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=timeout
    )
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    return p


def only_run(results: Path) -> RunDir:
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return RunDir.open(runs[0])


def pids_alive(run: RunDir) -> list[dict[str, Any]]:
    """The run's recorded processes that still run (same pid and start time)."""
    alive = []
    for r in read_records(run.path / "processes.jsonl"):
        try:
            p = psutil.Process(int(r["pid"]))
            if abs(p.create_time() - float(r["create_time"])) < 0.01 and p.status() != "zombie":
                alive.append(r)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, RunDir, Any]]:
    """One full quick run through the CLI, shared by the assertions below (about 30 s)."""
    d = tmp_path_factory.mktemp("net-e2e")
    spec = d / "quick.yaml"
    spec.write_text(QUICK, encoding="utf-8")
    results = d / "results"
    p = gridbench(results, "net", "run", str(spec), "--verbose")  # the full tables
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    run = only_run(results)
    yield results, run, p


def test_quick_run_measures_every_pattern(quick_run: tuple[Path, RunDir, Any]) -> None:
    _, run, _ = quick_run
    m = json.loads(run.metrics_file.read_text())
    assert m["schema"] == "gridbench.net/1" and m["kind"] == "net" and m["status"] == "complete"
    series = {(s["transport"], s["env"]): s for s in m["pingpong"]}
    assert set(series) == {(t, e) for t in ("tcp", "zmq") for e in ("process", "host")}
    for s in series.values():
        assert [r["size_bytes"] for r in s["rows"]] == [0, 1024, 65536]
        for r in s["rows"]:
            assert r["tests"] == 3 and r["failed_tests"] == 0, r
            assert r["rtt_ms"]["mean"] > 0 and r["rtt_ms"]["p50"] > 0
            # the seed's formulas on the row's own figures
            assert r["one_way_ms"] == pytest.approx(r["rtt_ms"]["mean"] / 2)
            if r["size_bytes"]:
                speed = 2 * r["size_bytes"] / (r["rtt_ms"]["mean"] / 1000) / 1e6
                assert r["speed_mb_s"] == pytest.approx(speed, rel=1e-6)
    # the floor was measured and every ping-pong figure at a sockperf size has a ratio
    host_1k = next(r for r in series[("tcp", "host")]["rows"] if r["size_bytes"] == 1024)
    assert host_1k["floor"] is not None and host_1k["floor"]["ratio"] > 0
    echo = {(s["transport"], s["env"], s["config"]) for s in m["echo"]}
    assert {
        ("grpc", "process", "inprocess"),
        ("grpc", "host", "network"),
        ("grpc", "host", "tls"),
    } <= echo
    scaling = next(s for s in m["echo_scaling"] if s["env"] == "host")
    assert [p["clients"] for p in scaling["points"]] == [1, 2, 3]
    burst = next(b for b in m["burst"] if b["env"] == "host")
    assert burst["calls"] == 200 and burst["enqueue_ms"]["mean"] > 0
    assert burst["enqueue_cpu_ms"]["mean"] > 0 and len(burst["rep_enqueue_cpu_ms"]) == burst["reps"]
    tools = {(t["tool"], t["direction"]) for t in m["transfer"] if t["env"] == "host"}
    assert tools == {(t, d) for t in ("tcp_streams", "zmq", "scp") for d in ("up", "down")}
    for t in m["transfer"]:
        assert t["reps"] == 2 and t["mb_s"]["mean"] > 0, t


def test_quick_run_leaves_nothing_running(quick_run: tuple[Path, RunDir, Any]) -> None:
    _, run, _ = quick_run
    book = read_records(run.path / "processes.jsonl")
    roles = {r["role"] for r in book}
    assert len(book) >= 5 and any("peer" in r for r in roles), roles
    assert pids_alive(run) == []


def test_quick_run_through_the_generic_commands(quick_run: tuple[Path, RunDir, Any]) -> None:
    results, run, p = quick_run
    assert "Size (kiB)" in p.stdout and "Speed (MB/s)" in p.stdout
    html = (run.path / "report.html").read_text()
    assert "Size (kiB)" in html and "net-e2e" in html
    listed = gridbench(results, "list")
    assert listed.returncode == 0 and run.id in listed.stdout and "net" in listed.stdout
    shown = gridbench(results, "show", run.id)
    assert shown.returncode == 0, shown.stderr
    a = gridbench(results, "analyze", run.id, "--json")
    assert a.returncode == 0, a.stderr
    assert json.loads(a.stdout)["schema"] == "gridbench.net/1"
    rep = gridbench(results, "net", "report", run.id, "--verbose")  # the full tables
    assert rep.returncode == 0 and "Size (kiB)" in rep.stdout
    c = gridbench(results, "cleanup", run.id, "--dry-run")
    assert c.returncode == 0, c.stdout + c.stderr


def test_relay_with_a_known_delay_is_flagged_above_the_floor(tmp_path: Path) -> None:
    spec, data = load_net_spec_text(
        "name: relay-delay\nenvironments: [host, relay]\n"
        "relay: {tool: gridbench, delay: 5ms}\n"
        "pingpong: {transports: [tcp, muscle3], sizes: {list: [1k]}, tests: 3, round_trips: 3}\n"
        "echo: {enabled: false}\nburst: {enabled: false}\ntransfer: {enabled: false}\n"
        "floor: {iperf3: false, duration: 0.5s}\n"
    )
    from gridbench.messaging.analysis import analyze_and_write

    run = NetRunner(spec, data, tmp_path / "results").execute()
    m = analyze_and_write(run)
    relay = next(s for s in m["pingpong"] if s["env"] == "relay")["rows"][0]
    # the forwarder holds each chunk 5 ms each way: at least 10 ms per round trip
    assert relay["rtt_ms"]["min"] >= 10.0, relay
    assert relay["floor"] is not None and relay["floor"]["ratio"] > 2.0
    assert relay["overhead"] is True
    flagged = [o for o in m["overheads"] if o["env"] == "relay"]
    assert flagged and "relay" in flagged[0]["statement"]
    # MUSCLE3's pair ran on this host only, beside raw TCP at the same size
    muscle = next(s for s in m["pingpong"] if s["transport"] == "muscle3")
    assert muscle["env"] == "host" and muscle["rows"][0]["tests"] == 3
    assert muscle["rows"][0]["rtt_ms"]["mean"] > 0
    assert pids_alive(run) == []


def test_a_peer_killed_mid_test_fails_that_test_and_the_run_goes_on(tmp_path: Path) -> None:
    spec, data = load_net_spec_text(
        "name: peer-dies\nenvironments: [host]\n"
        "pingpong: {transports: [tcp], sizes: {list: [1, 2]}, tests: 400, round_trips: 50}\n"
        "echo: {enabled: false}\nburst: {enabled: false}\ntransfer: {enabled: false}\n"
        "floor: {sockperf: false, iperf3: false}\ntest_timeout: 10s\n"
    )
    runner = NetRunner(spec, data, tmp_path / "results")
    run = runner.prepare()
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        records = run.path / "records.jsonl"
        while time.monotonic() < deadline:
            recs = read_records(records) if records.exists() else []
            peers = (
                [r for r in read_records(run.path / "processes.jsonl") if "peer" in r["role"]]
                if (run.path / "processes.jsonl").exists()
                else []
            )
            if peers and any(r.get("pattern") == "pingpong" for r in recs):
                os.kill(int(peers[0]["pid"]), signal.SIGKILL)
                killed.append(int(peers[0]["pid"]))
                return
            time.sleep(0.01)

    t = threading.Thread(target=killer)
    t.start()
    runner.execute()
    t.join()
    assert killed, "the test never saw a ping-pong record to kill the peer after"
    recs = [r for r in read_records(run.path / "records.jsonl") if r["pattern"] == "pingpong"]
    failed = [r for r in recs if not r["ok"]]
    assert len(failed) == 1 and failed[0]["size_bytes"] == 1 and failed[0]["error"], failed
    # the next size ran against a fresh peer, every test of it
    assert sum(1 for r in recs if r["ok"] and r["size_bytes"] == 2) == 400
    from gridbench.messaging.analysis import analyze_and_write

    m = analyze_and_write(run)
    row1 = next(r for r in m["pingpong"][0]["rows"] if r["size_bytes"] == 1)
    assert row1["failed_tests"] == 1 and row1["errors"]


def test_kill_9_then_cleanup_removes_namespaces_and_peers(tmp_path: Path) -> None:
    # Peers stop by themselves when the runner's pipe to them closes; the native tools'
    # servers do not. Kill the runner while sockperf's server runs inside the namespace.
    spec = tmp_path / "lan.yaml"
    spec.write_text(
        "name: killed\nenvironments: [lan]\nlan: {subnet: 10.248.7}\n"
        "pingpong: {transports: [tcp], sizes: {list: [64]}, tests: 2, round_trips: 2}\n"
        "echo: {enabled: false}\nburst: {enabled: false}\ntransfer: {enabled: false}\n"
        "floor: {iperf3: false, duration: 30s}\n",
        encoding="utf-8",
    )
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [str(BIN), "net", "run", str(spec)],
        env=cli_env(results),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        run = None
        while time.monotonic() < deadline:
            runs = [p for p in results.iterdir() if p.is_dir()] if results.exists() else []
            book = runs[0] / "processes.jsonl" if runs else None
            if book is not None and book.exists() and "sockperf" in book.read_text():
                run = RunDir.open(runs[0])
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.1)
        assert run is not None, "the run never started sockperf's server"
        time.sleep(1.0)  # sockperf's client is under way
        os.kill(proc.pid, signal.SIGKILL)  # the runner only: its server and namespace stay
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    left = pids_alive(run)
    assert any("sockperf" in r["role"] for r in left), left
    names = [r["name"] for r in read_records(run.path / "resources.jsonl") if r["kind"] == "netns"]
    assert names and all(n in _netns() for n in names)
    dry = gridbench(results, "cleanup", run.id, "--dry-run")
    assert dry.returncode == 0 and names[0] in dry.stdout, dry.stdout + dry.stderr
    assert pids_alive(run) and names[0] in _netns()  # a dry run touches nothing
    done = gridbench(results, "cleanup", run.id, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert pids_alive(run) == []
    assert not set(names) & set(_netns())
    again = gridbench(results, "cleanup", run.id, "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    # the killed run is still analysable and says it did not finish
    a = gridbench(results, "analyze", run.id, "--json")
    assert a.returncode != 0 or json.loads(a.stdout)["status"] != "complete", a.stdout[-2000:]
    assert "Traceback" not in a.stderr


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def test_bad_specs_are_refused_with_the_place_and_the_fix(tmp_path: Path) -> None:
    results = tmp_path / "results"
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\npingpong: {transprots: [tcp]}\n", encoding="utf-8")
    p = gridbench(results, "net", "validate", str(bad))
    assert p.returncode == 2 and "transprots" in p.stderr and "bad.yaml:2" in p.stderr, p.stderr
    tls = tmp_path / "tls.yaml"
    tls.write_text("name: x\necho: {transports: [zmq], configs: [tls]}\n", encoding="utf-8")
    p = gridbench(results, "net", "validate", str(tls))
    assert p.returncode == 2 and "grpc" in p.stderr
    huge = tmp_path / "huge.yaml"
    huge.write_text(
        "name: x\npingpong: {enabled: false}\necho: {enabled: false}\nburst: {enabled: false}\n"
        "transfer: {tools: [zmq], size: 16G}\n",
        encoding="utf-8",
    )
    p = gridbench(results, "net", "run", str(huge))
    assert p.returncode == 2 and "transfer.size" in p.stderr and "memory" in p.stderr, p.stderr
    assert not results.exists() or not any(results.iterdir())  # refused before the run
    spec, _ = load_net_spec_text("name: x\npingpong: {sizes: {max: 64M}}\n")
    with pytest.raises(SpecError, match=r"the run needs about") as err:
        check_memory(spec, available=100 * 1024**2)
    assert err.value.where == "pingpong.sizes.max"
    p = gridbench(results, "net", "plan", str(tmp_path / "missing.yaml"))
    assert p.returncode == 2 and "not found" in p.stderr


def test_compare_and_history_work_on_net_runs(tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(
        "name: tiny\nenvironments: [host]\n"
        "pingpong: {transports: [tcp], sizes: {list: [1k, 4k]}, tests: 5, round_trips: 5}\n"
        "echo: {enabled: false}\nburst: {enabled: false}\ntransfer: {enabled: false}\n"
        "floor: {sockperf: false, iperf3: false}\n",
        encoding="utf-8",
    )
    results = tmp_path / "results"
    for _ in range(2):
        assert gridbench(results, "net", "run", str(spec)).returncode == 0
    ids = sorted(p.name for p in results.iterdir() if p.is_dir())
    c = gridbench(results, "compare", *ids, "--json")
    assert c.returncode == 0, c.stderr
    doc = json.loads(c.stdout)
    text = json.dumps(doc)
    assert "tcp" in text and "1024" in text, text[:2000]
    h = gridbench(results, "history", ids[0], "--metric", "*", "--json")
    assert "Traceback" not in h.stderr


def test_lan_run_through_a_shaped_veth_pair(tmp_path: Path) -> None:
    """Every pattern across two network namespaces shaped to 100 Mbit/s: peers, sshd and
    the native servers run inside the namespace, the clients outside."""
    spec, data = load_net_spec_text(
        "name: lan\nenvironments: [lan]\nlan: {rate: 100mbit, subnet: 10.248.9}\n"
        "pingpong: {transports: [tcp, zmq], sizes: {list: [1k, 64k]}, tests: 2, round_trips: 3}\n"
        "echo: {transports: [grpc], configs: [network, tls], calls: [10], repetitions: 1,"
        " clients: [1, 2], client_calls: 5, scale_repetitions: 1}\n"
        "burst: {transport: zmq, calls: 100, repetitions: 1}\n"
        "transfer: {tools: [tcp_streams, scp], size: 2M, repetitions: 1, streams: 2}\n"
        "floor: {duration: 1s, iperf3_streams: 2}\n"
    )
    from gridbench.messaging.analysis import analyze_and_write

    run = NetRunner(spec, data, tmp_path / "results").execute()
    m = analyze_and_write(run)
    assert m["status"] == "complete"
    for s in m["pingpong"]:
        assert s["env"] == "lan" and all(r["failed_tests"] == 0 for r in s["rows"]), s
    assert {(s["config"], s["env"]) for s in m["echo"]} == {("network", "lan"), ("tls", "lan")}
    limit = 100e6 / 8 / 1e6 * 1.2  # MB/s: the tbf rate, with head room for its burst
    iperf = [i for f in m["floor"] for i in f["iperf3"]]
    assert iperf and all(i["mb_s"] < limit for i in iperf), iperf
    assert {t["tool"] for t in m["transfer"]} == {"tcp_streams", "scp"}
    # tbf lets its 256 KiB bucket through at once: a 2 MiB move can beat the rate by that
    burst_limit = limit * (2 * 1024**2) / (2 * 1024**2 - 256 * 1024)
    for t in m["transfer"]:
        assert 0 < t["mb_s"]["mean"] < burst_limit, t
    names = [r["name"] for r in read_records(run.path / "resources.jsonl") if r["kind"] == "netns"]
    assert names and not set(names) & set(_netns())  # torn down at the end
    assert pids_alive(run) == []


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[2].glob("examples/net-*.yaml")))
def test_examples_validate_and_plan(path: Path, tmp_path: Path) -> None:
    p = gridbench(tmp_path / "results", "net", "validate", str(path))
    assert p.returncode == 0, p.stderr
    plan = gridbench(tmp_path / "results", "net", "plan", str(path), "--json")
    assert plan.returncode == 0 and json.loads(plan.stdout)["steps"], plan.stderr
