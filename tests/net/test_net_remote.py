"""``gridbench net`` across hosts: the ``remote`` environment on the session's lab (peers and
floor servers on a lab host over SSH, the clients here), through the lab's latency path to
host 3 (Toxiproxy, LATENCY_MS per round trip), as a user runs it from the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from conftest import BIN, cli_env
from lab_fixtures import LATENCY_MS, Lab

SPEC = """\
name: net-remote
environments: [remote]
remote: {{inventory: {inventory}, peer: {peer}}}
pingpong: {{transports: [tcp, zmq], sizes: {{list: [1k]}}, tests: 2, round_trips: {trips}}}
echo: {{transports: [grpc], configs: [network], calls: [10], repetitions: 1, clients: []}}
floor: {{duration: 1s, iperf3_streams: 2}}
test_timeout: 30s
"""


def _spec(tmp_path: Path, lab: Lab, peer: str, trips: int = 10) -> Path:
    path = tmp_path / "remote.yaml"
    path.write_text(SPEC.format(inventory=lab.inventory, peer=peer, trips=trips))
    return path


def _cli(results: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([str(BIN), *args], env=cli_env(results), capture_output=True, text=True,
                       timeout=timeout, check=False)  # fmt: skip
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return r


def _remote_peers() -> list[psutil.Process]:
    """Peers and servers started for a remote environment, wherever they run here."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        line = " ".join(p.info["cmdline"] or [])
        if "gridbench.hosts.remote" in line or "gridbench.hosts.launch" in line:
            found.append(p)
    return found


def _gone_soon(timeout: float = 15.0) -> bool:
    """Whether every remote peer has ended within ``timeout``: the lab's hosts are this
    machine's namespaces, so their side shows here too, ending a moment after its
    connection closed."""
    deadline = time.monotonic() + timeout
    while _remote_peers() and time.monotonic() < deadline:
        time.sleep(0.2)
    return _remote_peers() == []


def _proxies(lab: Lab) -> list[str]:
    lat = lab.host(3).latency
    assert lat is not None, "the session lab's host 3 has a latency path"
    return [
        n for n in httpx.get(f"{lat.api}/proxies", timeout=10).json() if n.startswith("gridbench-")
    ]


def test_pingpong_and_its_floor_both_cross_the_latency_path(tmp_path: Path, lab: Lab) -> None:
    results = tmp_path / "results"
    r = _cli(results, "net", "run", str(_spec(tmp_path, lab, f"{lab.name}-3")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run = next(results.glob("*-net-remote"))
    metrics = json.loads((run / "metrics.json").read_text())
    series = {s["transport"]: s for s in metrics["pingpong"]}
    assert set(series) == {"tcp", "zmq"}
    for s in series.values():
        assert s["env"] == "remote"
        row = s["rows"][0]
        assert row["failed_tests"] == 0 and row["round_trips"] == 20
        # every round trip crosses the path: at least its delay, and not much more
        assert LATENCY_MS <= row["rtt_ms"]["min"] <= row["rtt_ms"]["mean"] < LATENCY_MS + 25
        # the floor took the same path: the ratio is near 1, not LATENCY_MS / loopback
        assert row["floor"]["tool"] == "sockperf"
        assert LATENCY_MS <= row["floor"]["value"] < LATENCY_MS + 25
        assert 0.5 < row["floor"]["ratio"] < 2.0
    floor = next(f for f in metrics["floor"] if f["env"] == "remote")
    assert [x["streams"] for x in floor["iperf3"] if x["direction"] == "up"] == [1, 2]
    echo = metrics["echo"][0]
    assert echo["env"] == "remote" and echo["rows"][0]["mean_ms"] >= LATENCY_MS
    notes = " ".join(json.loads((run / "experiment.json").read_text()).get("notes", []))
    assert f"peers on {lab.name}-3" in notes and "toxiproxy" in notes and "clock" in notes
    # nothing is left: no SSH relay or launcher here, no proxy on the path
    assert _gone_soon()
    assert _proxies(lab) == []


def test_a_misspelt_host_is_one_error_at_validate(tmp_path: Path, lab: Lab) -> None:
    r = _cli(tmp_path, "net", "validate", str(_spec(tmp_path, lab, f"{lab.name}_3")))
    assert r.returncode == 2
    assert f"field 'remote.peer': no host '{lab.name}_3'" in r.stderr
    assert f"did you mean '{lab.name}-3'?" in r.stderr


def test_an_unreachable_host_is_one_error_before_anything_starts(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yaml"
    inventory.write_text("hosts:\n  ghost: {address: 127.0.0.1, ssh: {port: 1}}\n")
    spec = tmp_path / "ghost.yaml"
    spec.write_text(
        f"name: net-ghost\nenvironments: [remote]\nremote: {{inventory: {inventory}, "
        "peer: ghost}\npingpong: {transports: [tcp], sizes: {list: [1k]}}\n"
    )
    r = _cli(tmp_path / "results", "net", "run", str(spec))
    assert r.returncode != 0
    assert "remote.peer: host ghost (127.0.0.1): ssh: connection refused" in r.stderr
    assert "fix: check ghost's address" in r.stderr
    assert _remote_peers() == []


def test_kill_9_then_cleanup_ends_the_remote_peers_and_proxies(tmp_path: Path, lab: Lab) -> None:
    results = tmp_path / "results"
    spec = _spec(tmp_path, lab, f"{lab.name}-3", trips=100_000)
    proc = subprocess.Popen([str(BIN), "net", "run", str(spec)], env=cli_env(results),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (_proxies(lab) and _remote_peers()):
            time.sleep(0.2)
        assert _proxies(lab), "the run opened no proxy on the latency path"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    run = next(results.glob("*-net-remote"))
    dry = _cli(results, "cleanup", str(run), "--dry-run")
    assert "toxiproxy gridbench-" in dry.stdout and "would close it" in dry.stdout
    c = _cli(results, "cleanup", str(run), "--yes")
    assert c.returncode == 0, c.stdout + c.stderr
    assert "closed" in c.stdout
    assert _proxies(lab) == []
    # the SSH relays were stopped; the peers on the host ended with their connection
    assert _gone_soon()
    # a record planted in the run folder calls nothing: its proxy is left alone
    with (run / "resources.jsonl").open("a") as f:
        planted = {"kind": "toxiproxy", "name": "gridbench-00000000-1", "api": "http://x:1/;rm"}
        f.write(json.dumps(planted) + "\n")
    again = _cli(results, "cleanup", str(run), "--yes")
    assert "not a gridbench proxy, left alone" in again.stdout + again.stderr


DIXI = """\
name: net-dixi
environments: [remote]
remote: {{inventory: {inventory}, peer: {peer}, clients: [{peer}, {other}, local]}}
echo: {{transports: [grpc], configs: [network], calls: [10], repetitions: 1, clients: [1, 2],
        client_calls: 30, scale_repetitions: 1}}
floor: {{duration: 1s, iperf3: false}}
"""


def test_dixi_series_sets_cohosted_clients_against_remote_ones(tmp_path: Path, lab: Lab) -> None:
    """The service on host 1; 1 then 2 client processes on each of host 1 (co-hosted),
    host 2 and this host (remote), released together (000 §4.5.2-4.5.3)."""
    spec = tmp_path / "dixi.yaml"
    spec.write_text(DIXI.format(inventory=lab.inventory, peer=f"{lab.name}-1",
                                other=f"{lab.name}-2"))  # fmt: skip
    results = tmp_path / "results"
    r = _cli(results, "net", "run", str(spec))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run = next(results.glob("*-net-dixi"))
    series = json.loads((run / "metrics.json").read_text())["echo_scaling"]
    assert [(s["env"], s["config"]) for s in series] == [("remote", "network")]
    points = series[0]["points"]
    assert [(p["clients"], p["hosts"], p["total_clients"]) for p in points] == [
        (1, 3, 3),
        (2, 3, 6),
    ]
    for p in points:
        assert p["failed_reps"] == 0 and p["n"] == p["total_clients"] * 30
        assert 0 < p["cohosted_mean_ms"] < 1000 and 0 < p["remote_mean_ms"] < 1000
        # closed loop: the throughput is the clients over the mean latency
        assert p["throughput_per_s"] == pytest.approx(p["total_clients"] / p["mean_ms"] * 1e3)
    sat = series[0]["saturation"]
    assert sat["statement"].startswith(("saturated at", "not saturated up to"))
    # the records keep the two groups apart: one co-hosted client per client count on
    # host 1, the rest remote
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    scale = [x for x in recs if x.get("pattern") == "echo_scale"]
    assert [len(x["cohosted_lat_ns"]) for x in scale] == [30, 60]
    assert [len(x["remote_lat_ns"]) for x in scale] == [60, 120]
    report = (run / "report.html").read_text()
    assert "Co-hosted avg (ms)" in report and sat["statement"].split(":")[0] in report
    assert _gone_soon()


def test_a_misspelt_client_host_is_one_error_at_validate(tmp_path: Path, lab: Lab) -> None:
    spec = tmp_path / "dixi.yaml"
    spec.write_text(DIXI.format(inventory=lab.inventory, peer=f"{lab.name}-1", other="lab-22"))
    r = _cli(tmp_path, "net", "validate", str(spec))
    assert r.returncode == 2
    assert "field 'remote.clients.1': no host 'lab-22'" in r.stderr


MUSCLE = """\
name: net-muscle
environments: [remote]
remote: {{inventory: {inventory}, peer: {peer}}}
pingpong: {{transports: [muscle3, tcp], sizes: {{list: [1k]}}, tests: 2, round_trips: 10}}
floor: {{duration: 1s, iperf3: false}}
"""


def test_muscle3_pair_across_two_hosts_and_the_path_it_cannot_take(
    tmp_path: Path, lab: Lab
) -> None:
    """The manager and the driver here, the mirror on a lab host. To host 1 (no latency
    path) the pair has its floor; to host 3 its instances dial each other directly, past
    the latency path its floor crossed: no ratio, and the run says why (other_path)."""
    results = tmp_path / "results"
    found = {}
    for k in (1, 3):
        spec = tmp_path / f"muscle-{k}.yaml"
        spec.write_text(MUSCLE.format(inventory=lab.inventory, peer=f"{lab.name}-{k}"))
        r = _cli(results, "net", "run", str(spec))
        run = sorted(results.glob("*-net-muscle"))[-1]
        metrics = json.loads((run / "metrics.json").read_text())
        found[k] = ({s["transport"]: s["rows"][0] for s in metrics["pingpong"]}, metrics, r)
        muscle = found[k][0]["muscle3"]
        assert muscle["failed_tests"] == 0 and muscle["round_trips"] == 20, muscle["errors"]
        # the mirror ran on the host: its log came back over SSH, the manager's location
        # was handed to it
        assert (run / "work" / "remote" / "muscle3" / "mirror.log").exists()
    near, metrics, r = found[1]
    assert r.returncode == 0
    assert near["muscle3"]["floor"]["tool"] == "sockperf" and "floor_void" not in near["muscle3"]
    far, metrics, r = found[3]
    assert far["muscle3"]["floor"] is None
    assert far["muscle3"]["floor_void"] == "measured on the direct, its floor on the latency path"
    # the direct path skips the proxy's delay; tcp takes it, with its floor
    assert far["muscle3"]["rtt_ms"]["min"] < LATENCY_MS <= far["tcp"]["rtt_ms"]["min"]
    assert far["tcp"]["floor"]["tool"] == "sockperf"
    flags = [f for f in metrics["validity"]["flags"] if f["rule"] == "other_path"]
    assert [(f["name"], f["at"]) for f in flags] == [("muscle3", "size 1 KiB")]
    # flagged in the headline; the exit status stays the thresholds' (none here)
    assert r.returncode == 0 and "measured on another path than their floor" in r.stdout
    assert _gone_soon()
