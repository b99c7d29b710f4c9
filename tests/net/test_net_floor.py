"""The native floor: real sockperf and iperf3 on loopback and across a gridbench lan
(namespace + veth + tbf; root). Subnets 10.246.2x are this file's own."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from gridbench.errors import BackendError, GridbenchError
from gridbench.messaging.floor import (
    iperf3_floor,
    parse_iperf3,
    parse_sockperf,
    require_tool,
    sockperf_floor,
)
from gridbench.messaging.model import NetSpec
from gridbench.messaging.open_env import open_environment
from gridbench.messaging.processes import PROCESSES_FILE, ProcessBook


def spec(**kw: object) -> NetSpec:
    return NetSpec.model_validate({"name": "floor-test", **kw})


def check_rtt(rec: dict[str, object], size: int, env: str) -> None:
    assert rec["pattern"] == "floor" and rec["tool"] == "sockperf"
    assert rec["env"] == env and rec["size_bytes"] == size
    assert rec["ok"] is True and rec["error"] is None, rec["error"]
    rtt = rec["rtt_ns"]
    assert isinstance(rtt, dict)
    assert set(rtt) == {"mean", "min", "max", "p50", "p90", "p99", "p999"}
    assert 0 < rtt["min"] <= rtt["p50"] <= rtt["p90"] <= rtt["p99"] <= rtt["p999"] <= rtt["max"]
    assert rtt["min"] <= rtt["mean"] <= rtt["max"]
    assert isinstance(rec["samples"], int) and rec["samples"] > 10


def test_sockperf_on_loopback(tmp_path: Path) -> None:
    book = ProcessBook(tmp_path)
    with open_environment("host", spec(), tmp_path / "w", book) as env:
        recs = list(sockperf_floor(env, [0, 64, 70_000], 1.0, tmp_path / "w", timeout=20))
    assert [r["size_bytes"] for r in recs] == [0, 64, 70_000]
    check_rtt(recs[1], 64, "host")
    for r in (recs[0], recs[2]):
        assert r["ok"] is False and "14 to 65507 bytes" in str(r["error"])
    # the server was started through the environment (booked) and stopped afterwards
    assert "floor-sockperf-server" in (tmp_path / PROCESSES_FILE).read_text()


def test_iperf3_on_loopback_both_directions(tmp_path: Path) -> None:
    with open_environment("host", spec(), tmp_path / "w", ProcessBook(tmp_path)) as env:
        up = iperf3_floor(env, 2, 1.0, tmp_path / "w", reverse=False, timeout=20)
        down = iperf3_floor(env, 1, 1.0, tmp_path / "w", reverse=True, timeout=20)
    for rec, streams, direction in ((up, 2, "up"), (down, 1, "down")):
        assert rec["ok"] is True, rec["error"]
        assert (rec["tool"], rec["env"], rec["streams"]) == ("iperf3", "host", streams)
        assert rec["direction"] == direction
        assert rec["bits_per_second"] > 1e6 and 0.5 < rec["seconds"] < 5


def test_floor_across_a_shaped_lan(tmp_path: Path) -> None:
    s = spec(lan={"subnet": "10.246.21", "rate": "50mbit"})
    with open_environment("lan", s, tmp_path / "w", ProcessBook(tmp_path)) as env:
        assert env.floor_host == "10.246.21.2"
        recs = list(sockperf_floor(env, [1024], 1.0, tmp_path / "w", timeout=20))
        rec = iperf3_floor(env, 1, 1.0, tmp_path / "w", reverse=False, timeout=20)
    check_rtt(recs[0], 1024, "lan")
    assert rec["ok"] is True, rec["error"]
    # tbf at 50 Mbit/s bounds the throughput from above (and the link does carry data)
    assert 1e6 < rec["bits_per_second"] < 60e6


def test_missing_tools_name_their_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    for tool in ("sockperf", "iperf3", "socat"):
        with pytest.raises(GridbenchError, match=f"{tool} is not installed") as info:
            require_tool(tool)
        assert info.value.fix and f"apt-get install {tool}" in info.value.fix
    with open_environment("host", spec(), tmp_path / "w", ProcessBook(tmp_path)) as env:
        with pytest.raises(GridbenchError, match="sockperf is not installed"):
            list(sockperf_floor(env, [64], 1.0, tmp_path / "w", timeout=5))
        with pytest.raises(GridbenchError, match="iperf3 is not installed"):
            iperf3_floor(env, 1, 1.0, tmp_path / "w", reverse=False, timeout=5)
    assert not (tmp_path / PROCESSES_FILE).exists()  # nothing was started


def test_iperf3_output_is_checked() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    real = subprocess.run(
        ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-J", "-t", "1"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    with pytest.raises(BackendError, match="iperf3: unable to connect"):
        parse_iperf3(real.stdout)
    for bad, msg in (
        ("not json", "no JSON"),
        ("[1]", "not an object"),
        ('{"end": {}}', "no end.sum_received"),
        ('{"end": {"sum_received": {"bits_per_second": "fast", "seconds": 1}}}', "not a number"),
        ('{"end": {"sum_received": {"bits_per_second": -1, "seconds": 1}}}', "not a number"),
    ):
        with pytest.raises(BackendError, match=msg):
            parse_iperf3(bad)
    assert parse_iperf3('{"end": {"sum_received": {"bits_per_second": 8e9, "seconds": 1.5}}}') == (
        8e9,
        1.5,
    )


def test_sockperf_output_without_a_summary_is_an_error() -> None:
    with pytest.raises(BackendError, match="no round-trip summary"):
        parse_sockperf("sockperf: ERROR: A connection was forcibly closed by a peer\n")
