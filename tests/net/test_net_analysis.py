"""net analysis (messaging/analysis.py and the modules it uses): the seed's formulas on
hand-computed values, hand-written records.jsonl files (a failed test, a missing floor,
malformed lines, wrong types), overheads against the floor, the growth fit over client
counts, validity flags, thresholds, comparable figures and the metrics schema check."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import ResultsError
from gridbench.messaging.analysis import analyze_and_write, build_metrics, figures
from gridbench.messaging.hdr import describe_ms, percentiles_ms
from gridbench.messaging.metrics_schema import validate_metrics
from gridbench.messaging.summaries import TIMELINE_POINTS, speed_mb_s
from gridbench.store.layout import RunDir, read_json

MS = 1_000_000  # ns


def make_run(
    tmp_path: Path,
    records: list[dict[str, Any]] | str,
    *,
    spec: str = "name: nettest\n",
    **experiment: Any,
) -> RunDir:
    """A net results directory holding ``records`` (a list, or the file's raw text)."""
    run = RunDir.create(tmp_path, "nettest")
    run.spec_file.write_text(spec, encoding="utf-8")
    fields: dict[str, Any] = {
        "kind": "net",
        "name": "nettest",
        "status": "done",
        "environments": ["host", "lan"],
        "patterns": ["pingpong", "echo", "burst", "transfer"],
        "floor_factor": 2.0,
        "pingpong_tests": 3,
        "pingpong_round_trips": 4,
        "notes": ["an environment fact"],
    }
    fields.update(experiment)
    run.update_experiment(**fields)
    text = records if isinstance(records, str) else "".join(json.dumps(r) + "\n" for r in records)
    (run.path / "records.jsonl").write_text(text, encoding="utf-8")
    return run


def ping(transport: str, env: str, size: int, test: int, rtts_ms: list[float]) -> dict[str, Any]:
    return {
        "pattern": "pingpong",
        "env": env,
        "ok": True,
        "error": None,
        "transport": transport,
        "size_bytes": size,
        "test": test,
        "rtt_ns": [round(x * MS) for x in rtts_ms],
    }


def sockperf(env: str, size: int, mean_ms: float, samples: int = 5000) -> dict[str, Any]:
    ns = round(mean_ms * MS)
    return {
        "pattern": "floor",
        "tool": "sockperf",
        "env": env,
        "ok": True,
        "error": None,
        "size_bytes": size,
        "samples": samples,
        "rtt_ns": {
            "mean": ns,
            "min": ns // 2,
            "max": ns * 3,
            "p50": ns,
            "p90": ns,
            "p99": ns,
            "p999": ns,
        },
    }


def iperf3(env: str, streams: int, direction: str, mb_s: float) -> dict[str, Any]:
    return {
        "pattern": "floor",
        "tool": "iperf3",
        "env": env,
        "ok": True,
        "error": None,
        "streams": streams,
        "direction": direction,
        "bits_per_second": mb_s * 8e6,
        "seconds": 2.0,
    }


def echo(config: str, calls: int, rep: int, lat_ms: float, env: str = "host") -> dict[str, Any]:
    return {
        "pattern": "echo",
        "env": env,
        "ok": True,
        "error": None,
        "transport": "grpc",
        "config": config,
        "calls": calls,
        "rep": rep,
        "lat_ns": [round(lat_ms * MS)] * calls,
    }


def scale(clients: int, rep: int, mean_ms: float) -> dict[str, Any]:
    ns = round(mean_ms * MS)
    return {
        "pattern": "echo_scale",
        "env": "host",
        "ok": True,
        "error": None,
        "transport": "grpc",
        "config": "network",
        "clients": clients,
        "rep": rep,
        "lat_ns": [ns - 1000, ns + 1000] * clients,
        "client_mean_ns": [ns] * clients,
    }


def transfer(tool: str, streams: int, direction: str, seconds: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "pattern": "transfer",
            "env": "host",
            "ok": True,
            "error": None,
            "tool": tool,
            "direction": direction,
            "bytes": 10_000_000,
            "streams": streams,
            "rep": i,
            "elapsed_ns": round(s * 1e9),
        }
        for i, s in enumerate(seconds)
    ]


def sample_records() -> list[dict[str, Any]]:
    """A small but complete run: every pattern, one overhead, one failure of each kind."""
    recs: list[dict[str, Any]] = [
        sockperf("host", 1024, 0.39),  # tcp at 1 KiB: 1.172 / 0.39 = 3.0x -> overhead
        sockperf("host", 64, 0.1),
        iperf3("host", 1, "up", 100.0),
        iperf3("host", 1, "down", 120.0),
        iperf3("host", 4, "up", 400.0),
        {
            "pattern": "floor",
            "tool": "sockperf",
            "env": "lan",
            "ok": False,
            "error": "sockperf: cannot bind",
            "size_bytes": 1024,
        },
    ]
    for t in range(3):
        recs.append(ping("tcp", "host", 1024, t, [1.172] * 4))
        recs.append(ping("tcp", "lan", 1024, t, [0.5] * 4))
        recs.append(ping("tcp", "host", 1 << 20, t, [20.0] * 4))  # no sockperf: iperf3
    recs.append(ping("tcp", "host", 2048, 0, [1.0, 2.0, 3.0, 4.0]))
    recs.append(
        {
            "pattern": "pingpong",
            "env": "host",
            "ok": False,
            "error": "peer died: connection reset",
            "transport": "tcp",
            "size_bytes": 2048,
            "test": 1,
        }
    )
    for rep in range(2):
        recs.append(echo("network", 200, rep, 0.3 + 0.1 * rep))
        recs.append(echo("network", 400, rep, 0.4))
        recs.append(echo("inprocess", 200, rep, 0.05))
    for clients in (1, 2, 4, 8, 16):
        for rep in range(2):
            recs.append(scale(clients, rep, 0.5 + 0.01 * clients**2))
    arrivals = [1000 * i + 5000 for i in range(1200)]
    recs.append(
        {
            "pattern": "burst",
            "env": "host",
            "ok": True,
            "error": None,
            "transport": "grpc",
            "calls": 1200,
            "rep": 0,
            "enqueue_ns": 2 * MS,
            "enqueue_cpu_ns": 1.5 * MS,
            "first_ns": 5000,
            "arrival_ns": arrivals,
        }
    )
    recs += transfer("tcp_streams", 4, "up", [0.05, 0.05])  # 200 MB/s vs 400: 2.0x, not over
    recs += transfer("scp", 1, "up", [1.0, 0.5])  # 10 and 20 MB/s vs 100: overhead
    recs.append(
        {
            "pattern": "note",
            "env": "host",
            "ok": True,
            "error": None,
            "text": "muscle3 skipped",
            "transport": "muscle3",
        }
    )
    recs.append({"pattern": "note", "text": "an environment fact", "env": "host"})
    recs.append({"pattern": "note", "text": "a note with no environment"})
    return recs


def series(metrics: dict[str, Any], pattern: str, **match: Any) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        s for s in metrics[pattern] if all(s.get(k) == v for k, v in match.items())
    ]
    assert len(found) == 1, (pattern, match, metrics[pattern])
    return found[0]


def row(s: dict[str, Any], **match: Any) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [
        r for r in s["rows"] if all(r.get(k) == v for k, v in match.items())
    ]
    assert len(rows) == 1
    return rows[0]


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run = make_run(tmp_path_factory.mktemp("net"), sample_records())
    return analyze_and_write(run)


# -- the seed's formulas ------------------------------------------------------------------


def test_seed_speed_1kib_at_1172_ms_is_1747_mb_s() -> None:
    assert round(speed_mb_s(1024, 1.172) or 0, 3) == 1.747
    assert speed_mb_s(0, 1.0) == 0.0
    assert speed_mb_s(1024, None) is None


def test_pingpong_row_formulas(analysed: dict[str, Any]) -> None:
    r = row(series(analysed, "pingpong", transport="tcp", env="host"), size_bytes=2048)
    # one good test of 4 round trips: 1, 2, 3, 4 ms; the second test failed
    assert r["tests"] == 2 and r["failed_tests"] == 1 and r["round_trips"] == 4
    assert r["errors"] == ["peer died: connection reset"]
    assert r["total_ms"] == pytest.approx(10.0)
    assert r["rtt_ms"]["mean"] == pytest.approx(2.5)
    sd = math.sqrt(((1.5**2) * 2 + (0.5**2) * 2) / 3)  # sample sd, ddof 1
    assert r["rtt_ms"]["sd"] == pytest.approx(sd)
    assert r["rtt_ms"]["sd_pct"] == pytest.approx(sd / 2.5 * 100)
    assert r["one_way_ms"] == pytest.approx(1.25)
    assert r["speed_mb_s"] == pytest.approx(2 * 2048 / 2.5e-3 / 1e6)
    assert r["size_kib"] == 2.0
    assert r["rtt_ms"]["min"] == pytest.approx(1.0) and r["rtt_ms"]["max"] == pytest.approx(4.0)
    assert r["rtt_ms"]["p99"] is None and r["rtt_ms"]["p999"] is None  # 4 samples: withheld


def test_seed_row_total_is_t_times_m(analysed: dict[str, Any]) -> None:
    r = row(series(analysed, "pingpong", transport="tcp", env="host"), size_bytes=1024)
    assert r["round_trips"] == 12
    assert r["total_ms"] == pytest.approx(12 * 1.172)
    assert r["rtt_ms"]["mean"] == pytest.approx(1.172)
    assert r["speed_mb_s"] == pytest.approx(1.74744, rel=1e-5)
    assert r["test_means_ms"] == pytest.approx([1.172] * 3)


def test_hdr_percentiles_within_precision() -> None:
    values = list(range(1 * MS, 2001 * MS, MS))  # 1 .. 2000 ms
    p = percentiles_ms(values)
    for name, exact in (("p50", 1000.5), ("p90", 1800.1), ("p99", 1980.01), ("p999", 1998.0)):
        assert p[name] == pytest.approx(exact, rel=2e-3), name
    small = describe_ms([MS] * 50)
    assert small["p90"] == pytest.approx(1.0, rel=1e-3) and small["p99"] is None


# -- the floor and overheads --------------------------------------------------------------


def test_overhead_flag_above_factor(analysed: dict[str, Any]) -> None:
    r = row(series(analysed, "pingpong", transport="tcp", env="host"), size_bytes=1024)
    assert r["floor"]["tool"] == "sockperf" and r["floor"]["figure"] == "rtt_ms"
    assert r["floor"]["value"] == pytest.approx(0.39)
    assert r["floor"]["ratio"] == pytest.approx(1.172 / 0.39)
    assert r["overhead"] is True
    # 2 KiB lies above every sockperf size and below 64 KiB: no floor, not bulk-bound
    r2k = row(series(analysed, "pingpong", transport="tcp", env="host"), size_bytes=2048)
    assert r2k["floor"] is None and r2k["overhead"] is False
    o = [x for x in analysed["overheads"] if x["pattern"] == "pingpong"]
    assert len(o) == 1 and o[0]["size_bytes"] == 1024
    assert o[0]["statement"] == (
        "tcp between two processes on the host: median RTT 1.17 ms at 1 KiB is 3.0× the network's "
        "0.39 ms (sockperf)"
    )
    assert analysed["overheads_count"] == len(analysed["overheads"])


@pytest.mark.parametrize(("floor_ms", "flagged"), [(0.5, True), (0.586, False), (0.8, False)])
def test_overhead_fires_above_factor_not_at_or_below(
    tmp_path: Path, floor_ms: float, flagged: bool
) -> None:
    # 1.172 / 0.586 = 2.0 exactly: at the factor, not above it
    recs = [sockperf("host", 1024, floor_ms), ping("tcp", "host", 1024, 0, [1.172] * 4)]
    m = build_metrics(make_run(tmp_path, recs))
    r = m["pingpong"][0]["rows"][0]
    assert r["overhead"] is flagged
    assert len(m["overheads"]) == int(flagged)


def test_the_seed_wan_story_is_found(tmp_path: Path) -> None:
    """METHODS 3.1: ping 38 ms against an RTT of 115 ms, an overhead of about 3x."""
    recs = [sockperf("relay", 1024, 38.0)]
    recs += [ping("muscle3", "relay", 1024, t, [115.0] * 4) for t in range(3)]
    m = build_metrics(make_run(tmp_path, recs, environments=["relay"]))
    assert [o["statement"] for o in m["overheads"]] == [
        "muscle3 over the relay: median RTT 115 ms at 1 KiB is 3.0× the network's 38 ms (sockperf)"
    ]
    assert m["overheads"][0]["ratio"] == pytest.approx(115 / 38)


def test_small_size_takes_next_sockperf_size(tmp_path: Path) -> None:
    recs = [
        sockperf("host", 16, 0.1),
        sockperf("host", 64, 0.2),
        ping("tcp", "host", 0, 0, [0.3] * 4),
    ]
    m = build_metrics(make_run(tmp_path, recs))
    r = m["pingpong"][0]["rows"][0]
    assert r["speed_mb_s"] == 0.0 and r["floor"]["size_bytes"] == 16
    assert r["floor"]["ratio"] == pytest.approx(3.0) and r["overhead"] is True
    assert m["overheads"][0]["statement"].endswith("0.1 ms (sockperf at 16 B)")


def test_factor_from_experiment(tmp_path: Path) -> None:
    recs = [sockperf("host", 1024, 0.39), ping("tcp", "host", 1024, 0, [1.172] * 4)]
    m = build_metrics(make_run(tmp_path, recs, floor_factor=4.0))
    assert m["floor_factor"] == 4.0 and m["overheads"] == []


def test_iperf3_floor_for_a_size_sockperf_lacks(analysed: dict[str, Any]) -> None:
    r = row(series(analysed, "pingpong", transport="tcp", env="host"), size_bytes=1 << 20)
    speed = 2 * (1 << 20) / 20e-3 / 1e6  # 104.9 MB/s
    assert r["speed_mb_s"] == pytest.approx(speed)
    assert r["floor"]["tool"] == "iperf3" and r["floor"]["figure"] == "speed_mb_s"
    assert r["floor"]["value"] == pytest.approx(110.0)  # the mean of up and down, -P 1
    assert r["floor"]["ratio"] == pytest.approx(110.0 / speed)
    assert r["overhead"] is False


def test_missing_floor_leaves_no_ratio_and_is_flagged(analysed: dict[str, Any]) -> None:
    r = row(series(analysed, "pingpong", transport="tcp", env="lan"), size_bytes=1024)
    assert r["floor"] is None and r["overhead"] is False
    lan = next(f for f in analysed["floor"] if f["env"] == "lan")
    assert lan["failed"][0]["error"] == "sockperf: cannot bind"
    flags = [f for f in analysed["validity"]["flags"] if f["rule"] == "no_floor"]
    assert [(f["env"], f["name"], f["at"]) for f in flags] == [("lan", "sockperf", "1 figure(s)")]
    assert flags[0]["detail"] == (
        "no ratio for tcp at 1 KiB: sockperf could not be measured (sockperf: cannot bind)"
    )


def test_sockperf_range_refusals_cost_no_ratio_and_are_not_flagged(tmp_path: Path) -> None:
    refused = {
        "pattern": "floor",
        "tool": "sockperf",
        "env": "host",
        "ok": False,
        "error": "sockperf sends messages of 14 to 65507 bytes only",
        "rtt_ns": None,
        "samples": 0,
    }
    recs = [{**refused, "size_bytes": 0}, {**refused, "size_bytes": 1 << 17}]
    recs += [sockperf("host", 64, 0.055), iperf3("host", 1, "up", 2000.0)]
    recs += [ping("tcp", "host", 0, 0, [0.027] * 4), ping("tcp", "host", 1 << 17, 0, [0.07] * 4)]
    m = build_metrics(make_run(tmp_path, recs))
    rows = m["pingpong"][0]["rows"]
    assert [r["floor"]["tool"] for r in rows] == ["sockperf", "iperf3"]
    # 0 B against sockperf's 64 B is a bound, not a floor: ratio 0.49 is not flagged
    assert rows[0]["floor"]["ratio"] == pytest.approx(0.027 / 0.055)
    assert m["validity"]["flags"] == [] and m["validity"]["valid"] is True
    assert len(m["floor"][0]["failed"]) == 2


def test_echo_series_and_floor(analysed: dict[str, Any]) -> None:
    s = series(analysed, "echo", config="network")
    r200 = row(s, calls=200)
    assert r200["reps"] == 2 and r200["n"] == 400
    assert r200["mean_ms"] == pytest.approx(0.35)
    assert r200["total_ms"]["mean"] == pytest.approx(200 * 0.35)
    assert r200["total_ms"]["sd"] == pytest.approx(math.sqrt(200))  # series of 60 and 80 ms
    assert r200["p50_ms"] == pytest.approx(0.3, rel=1e-3) and r200["p99_ms"] == pytest.approx(
        0.4, rel=1e-3
    )
    assert r200["rep_means_ms"] == pytest.approx([0.3, 0.4])
    # payload 64 B: sockperf's 64 B figure, 0.1 ms
    assert s["floor"]["size_bytes"] == 64 and s["floor"]["payload_bytes"] == 64
    # the floor compares medians (robust on a shared machine)
    assert s["floor"]["ratio"] == pytest.approx(s["p50_ms"] / 0.1)
    assert s["overhead"] is True
    inproc = series(analysed, "echo", config="inprocess")
    assert inproc["floor"] is None and inproc["overhead"] is False


def test_echo_floor_takes_next_size_up(tmp_path: Path) -> None:
    recs = [sockperf("host", 16, 0.05), sockperf("host", 128, 0.2), sockperf("host", 4096, 0.3)]
    recs += [echo("network", 10, 0, 0.25)]
    m = build_metrics(make_run(tmp_path, recs, spec="name: x\necho:\n  payload: 100\n"))
    fl = m["echo"][0]["floor"]
    assert (fl["size_bytes"], fl["payload_bytes"], fl["value"]) == (128, 100, pytest.approx(0.2))


def test_transfer_against_iperf3_same_streams(analysed: dict[str, Any]) -> None:
    t4 = next(t for t in analysed["transfer"] if t["tool"] == "tcp_streams")
    assert t4["mb_s"]["mean"] == pytest.approx(200.0)
    assert t4["floor"] == {
        "tool": "iperf3",
        "streams": 4,
        "value_mb_s": pytest.approx(400.0),
        "ratio": pytest.approx(2.0),
    }
    assert t4["overhead"] is False  # 2.0 is not above 2.0
    scp = next(t for t in analysed["transfer"] if t["tool"] == "scp")
    assert scp["mb_s"] == {
        "mean": pytest.approx(15.0),
        "sd": pytest.approx(math.sqrt(50)),
        "min": pytest.approx(10.0),
        "max": pytest.approx(20.0),
    }
    assert scp["floor"]["streams"] == 1 and scp["floor"]["value_mb_s"] == pytest.approx(100.0)
    assert scp["overhead"] is True
    assert any(o["pattern"] == "transfer" and o["tool"] == "scp" for o in analysed["overheads"])


# -- scaling, burst ------------------------------------------------------------------------


def test_quadratic_growth_over_clients(analysed: dict[str, Any]) -> None:
    s = analysed["echo_scaling"][0]
    assert [p["clients"] for p in s["points"]] == [1, 2, 4, 8, 16]
    assert s["points"][-1]["mean_ms"] == pytest.approx(0.5 + 0.01 * 256)
    assert s["points"][0]["reps"] == 2 and s["points"][0]["client_sd_ms"] == pytest.approx(0.0)
    assert s["fit"]["model"] == "quadratic"
    assert "mean latency grows quadratically" in s["fit"]["statement"]
    assert "0.5 + 0.01·x² ms" in s["fit"]["statement"]


def test_burst_summary_and_timeline(analysed: dict[str, Any]) -> None:
    b = analysed["burst"][0]
    assert b["calls"] == 1200 and b["reps"] == 1 and b["responses_min"] == 1200
    assert b["enqueue_ms"]["mean"] == pytest.approx(2.0)
    assert b["enqueue_cpu_ms"]["mean"] == pytest.approx(1.5)
    assert b["rep_enqueue_cpu_ms"] == [pytest.approx(1.5)]
    assert b["first_ms"]["mean"] == pytest.approx(0.005)
    assert b["gap_ms"]["p50"] == pytest.approx(0.001, rel=1e-3) and b["gap_ms"]["n"] == 1199
    tl = b["timeline"]
    assert len(tl["t_ms"]) <= TIMELINE_POINTS and len(tl["t_ms"]) == len(tl["completed"])
    assert tl["completed"][0] == 1 and tl["completed"][-1] == 1200
    assert tl["t_ms"][-1] == pytest.approx((1000 * 1199 + 5000) / 1e6)


def test_incomplete_burst_is_flagged(tmp_path: Path) -> None:
    rec = {
        "pattern": "burst",
        "env": "host",
        "ok": True,
        "error": None,
        "transport": "zmq",
        "calls": 10,
        "rep": 0,
        "enqueue_ns": 100,
        "first_ns": 200,
        "arrival_ns": [200, 300, 400],
    }
    m = build_metrics(make_run(tmp_path, [rec]))
    flags = m["validity"]["flags"]
    assert [f["rule"] for f in flags] == ["incomplete_burst"] and not m["validity"]["valid"]
    assert "only 3 of 10" in flags[0]["detail"]
    # a record of an older run has no enqueue CPU time: the figure is absent, not zero
    b = m["burst"][0]
    assert b["enqueue_cpu_ms"]["mean"] is None and b["rep_enqueue_cpu_ms"] == []
    assert b["enqueue_ms"]["mean"] == pytest.approx(0.0001)


def test_burst_enqueue_cpu_must_be_a_number(tmp_path: Path) -> None:
    rec = {
        "pattern": "burst",
        "env": "host",
        "ok": True,
        "error": None,
        "transport": "grpc",
        "calls": 1,
        "rep": 0,
        "enqueue_ns": 100,
        "enqueue_cpu_ns": "fast",
        "first_ns": 200,
        "arrival_ns": [200],
    }
    with pytest.raises(ResultsError) as err:
        build_metrics(make_run(tmp_path, [rec]))
    assert "enqueue_cpu_ns" in str(err.value)


# -- validity, thresholds, figures, notes -------------------------------------------------


def test_validity_flags(analysed: dict[str, Any]) -> None:
    v = analysed["validity"]
    assert v["valid"] is False
    failed = [f for f in v["flags"] if f["rule"] == "failed_tests"]
    assert len(failed) == 1 and failed[0]["at"] == "size 2 KiB"
    assert failed[0]["detail"] == "1 of 2 failed: peer died: connection reset"
    assert {r["name"] for r in v["rules"]} >= {
        "failed_tests",
        "no_floor",
        "below_floor",
        "few_samples",
    }
    assert any(w["percentiles"] == ["p99", "p999"] for w in v["withheld"])


def test_below_floor_flag(tmp_path: Path) -> None:
    recs = [sockperf("host", 1024, 5.0), ping("tcp", "host", 1024, 0, [1.0] * 4)]
    m = build_metrics(make_run(tmp_path, recs))
    assert [f["rule"] for f in m["validity"]["flags"]] == ["below_floor"]
    assert m["validity"]["flags"][0]["ratio"] == pytest.approx(0.2)


def test_a_threshold_on_a_void_floor_ratio_does_not_pass(tmp_path: Path) -> None:
    """The headline's "better than the network's floor: the comparison is void" and the
    threshold on that same ratio agree (issue 21.8): the ratio 0.2 is voided, 0.6 is not."""
    spec = (
        "name: x\nthresholds:\n"
        "  - {metric: pingpong.tcp.host.1024.floor.ratio, op: '<=', value: 3}\n"
    )
    void = [sockperf("host", 1024, 5.0), ping("tcp", "host", 1024, 0, [1.0] * 4)]
    m = build_metrics(make_run(tmp_path / "void", void, spec=spec))
    [t] = m["thresholds"]
    assert t["actual"] == pytest.approx(0.2) and t["passed"] is False, t
    assert t["reason"].startswith("void: 5.0× better than the network's floor"), t
    assert m["thresholds_ok"] is False
    fine = [sockperf("host", 1024, 5.0), ping("tcp", "host", 1024, 0, [3.0] * 4)]
    m = build_metrics(make_run(tmp_path / "fine", fine, spec=spec))
    [t] = m["thresholds"]
    assert t["actual"] == pytest.approx(0.6) and t["passed"] is True, t


def test_thresholds_on_keyed_paths(tmp_path: Path) -> None:
    spec = (
        "name: x\nthresholds:\n"
        "  - {metric: pingpong.tcp.host.1024.rtt_ms.mean, op: '<', value: 1.0}\n"
        "  - {metric: pingpong.tcp.host.1024.speed_mb_s, op: '>', value: 1.0}\n"
        "  - {metric: overheads_count, op: '==', value: 1}\n"
        "  - {metric: pingpong.tcp.nowhere.1024.rtt_ms.mean, value: 1}\n"
        "  - {metric: burst.grpc.host.enqueue_cpu_ms.mean, op: '<', value: 50}\n"
    )
    m = build_metrics(make_run(tmp_path, sample_records(), spec=spec))
    th = m["thresholds"]
    assert [t["passed"] for t in th] == [False, True, False, False, True]
    assert th[4]["actual"] == pytest.approx(1.5)
    assert th[0]["actual"] == pytest.approx(1.172)
    assert th[2]["actual"] == 3.0  # tcp at 1 KiB, the echo series, scp
    assert "unknown metric path" in th[3]["reason"]
    assert m["thresholds_ok"] is False


def test_figures_have_stable_keys_and_samples(analysed: dict[str, Any]) -> None:
    figs = {f.key: f for f in figures(analysed)}
    f = figs["pingpong.tcp.host.1024.rtt_ms"]
    assert (
        f.samples == pytest.approx((1.172,) * 3) and f.unit == "ms" and f.higher_is_better is False
    )
    assert figs["echo.grpc.host.network.200.mean_ms"].samples == pytest.approx((0.3, 0.4))
    assert figs["echo_scaling.grpc.host.network.16.mean_ms"].samples == pytest.approx((3.06, 3.06))
    assert figs["transfer.scp.host.up.1.mb_s"].samples == pytest.approx((10.0, 20.0))
    assert figs["transfer.scp.host.up.1.mb_s"].higher_is_better is True
    assert figs["burst.grpc.host.first_ms"].samples == pytest.approx((0.005,))
    assert figs["burst.grpc.host.enqueue_ms"].samples == pytest.approx((2.0,))
    assert figs["burst.grpc.host.enqueue_cpu_ms"].samples == pytest.approx((1.5,))
    assert "client CPU" in figs["burst.grpc.host.enqueue_cpu_ms"].label


def test_notes_and_metrics_file(analysed: dict[str, Any], tmp_path: Path) -> None:
    assert analysed["notes"] == [
        "an environment fact",  # in experiment.json and as a record: once
        "muscle3 between two processes on the host: muscle3 skipped",
        "a note with no environment",
    ]
    assert analysed["schema"] == "gridbench.net/1" and analysed["kind"] == "net"
    assert analysed["status"] == "complete" and analysed["thresholds_ok"] is True
    validate_metrics(analysed)


def test_metrics_json_written(tmp_path: Path) -> None:
    run = make_run(tmp_path, sample_records())
    m = analyze_and_write(run)
    on_disk = read_json(run.metrics_file)
    assert on_disk["pingpong"] == json.loads(json.dumps(m["pingpong"]))
    validate_metrics(on_disk, str(run.metrics_file))


def test_empty_run_analyses(tmp_path: Path) -> None:
    m = build_metrics(make_run(tmp_path, [], status="failed", error="sockperf missing"))
    assert m["pingpong"] == [] and m["validity"]["valid"] is True and m["status"] == "failed"
    validate_metrics(m)


# -- foreign input --------------------------------------------------------------------------


def _error(run: RunDir) -> ResultsError:
    with pytest.raises(ResultsError) as exc:
        build_metrics(run)
    return exc.value


def test_a_linked_records_file_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(json.dumps(ping("tcp", "host", 0, 0, [0.1])) + "\n")
    run = make_run(tmp_path / "store", [])
    records = run.path / "records.jsonl"
    records.unlink(missing_ok=True)
    records.symlink_to(outside)
    err = _error(run)
    assert "link" in err.message and str(records) in (err.where or ""), err


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    good = json.dumps(ping("tcp", "host", 0, 0, [0.1]))
    run = make_run(tmp_path, f'{good}\n\n{{"pattern": "pingp\n{good}\n')
    err = _error(run)
    assert err.where == f"{run.path / 'records.jsonl'}:3"
    assert "not valid JSON" in err.message and "delete it" in (err.fix or "")


def test_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    # a run killed mid-write: the cut record was never complete, the others are kept
    good = json.dumps(ping("tcp", "host", 0, 0, [0.1]))
    whole = build_metrics(make_run(tmp_path / "a", f"{good}\n{good}\n"))
    torn = build_metrics(make_run(tmp_path / "b", f'{good}\n{good}\n{{"pattern": "pingp'))
    assert torn["pingpong"] == whole["pingpong"]
    assert torn["pingpong"][0]["rows"][0]["tests"] == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rtt_ns": [1, "2"]}, "'rtt_ns' must be a list of numbers >= 0 (item 1 is \"2\")"),
        ({"size_bytes": True}, "'size_bytes' must be a whole number >= 0"),
        ({"size_bytes": -1}, "'size_bytes' must be a whole number >= 0"),
        ({"ok": "yes"}, "'ok' must be true or false"),
        ({"transport": None}, "'transport' must be a string"),
        ({"pattern": "pong"}, 'unknown record pattern "pong"'),
        ({"error": 3}, "'error' must be a string or null"),
    ],
)
def test_wrong_types_are_clear_errors(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    rec = {**ping("tcp", "host", 64, 0, [0.1]), **change}
    run = make_run(tmp_path, [ping("tcp", "host", 64, 1, [0.1]), rec])
    err = _error(run)
    assert err.where == f"{run.path / 'records.jsonl'}:2"
    assert message in err.message


def test_missing_field_and_not_an_object(tmp_path: Path) -> None:
    rec = ping("tcp", "host", 64, 0, [0.1])
    del rec["rtt_ns"]
    assert _error(make_run(tmp_path, [rec])).message == "pingpong record has no 'rtt_ns'"
    rec["ok"] = False  # a failed test need not carry its round trips
    assert build_metrics(make_run(tmp_path, [rec]))["pingpong"][0]["rows"][0]["failed_tests"] == 1
    assert "not a JSON object" in _error(make_run(tmp_path, "[1, 2]\n")).message


def test_bad_floor_factor_and_kind(tmp_path: Path) -> None:
    err = _error(make_run(tmp_path, [], floor_factor="2"))
    assert err.where is not None and err.where.endswith("experiment.json: floor_factor")
    err = _error(make_run(tmp_path, [], kind="io"))
    assert "not a messaging (net) results directory" in err.message


def test_schema_check_names_the_field(analysed: dict[str, Any]) -> None:
    bad = json.loads(json.dumps(analysed))
    bad["pingpong"][0]["rows"][0]["rtt_ms"]["mean"] = "1.2"
    with pytest.raises(ResultsError) as exc:
        validate_metrics(bad, "RUN/metrics.json")
    assert exc.value.where == "RUN/metrics.json: pingpong.0.rows.0.rtt_ms.mean"
    assert "valid number" in exc.value.message
    bad = json.loads(json.dumps(analysed))
    bad["transfer"][0]["streams"] = None
    with pytest.raises(ResultsError) as exc:
        validate_metrics(bad, "m.json")
    assert exc.value.where == "m.json: transfer.0.streams"
    with pytest.raises(ResultsError) as exc:
        validate_metrics({**analysed, "schema": "gridbench.io/1"}, "m.json")
    assert "unsupported metrics schema" in exc.value.message
