"""Narrow tests of the resilience pieces: the spec's errors, gluster's answers parsed, the
integrity check on real files, the analysis of recorded events, the schema."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import BackendError, ResultsError, SpecError
from gridbench.io.gluster import find_brick, parse_heal_count, parse_status_xml
from gridbench.io.integrity import Written, verify
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics_schema import validate_metrics
from gridbench.io.resilience_analysis import fault_effect, series, summarise, validity_flags

BASE = (
    "name: r\ntargets: [{name: g, path: /mnt/g}]\niozone: {enabled: false}\n"
    "resilience:\n  target: g\n  system: {volume: v}\n  duration: 10s\n"
)


def _err(text: str) -> str:
    with pytest.raises(SpecError) as ei:
        load_io_spec_text(text, "s.yaml")
    return str(ei.value)


def test_spec_faults_and_their_errors() -> None:
    spec, _ = load_io_spec_text(
        BASE + "  faults: [{at: 2s, action: kill, server: brick2}, "
        "{at: 5s, action: restart, server: 'vm:/b/2'}]\n",
        "s.yaml",
    )
    assert spec.resilience is not None and [f.at for f in spec.resilience.faults] == [2.0, 5.0]
    assert spec.resilience.system is not None and spec.resilience.system.cli == ["gluster"]
    e = _err(BASE + "  faults: [{at: 2s, action: explode, server: brick2}]\n")
    assert "s.yaml:8" in e and "resilience.faults.0.action" in e and "'kill'" in e
    e = _err(BASE + "  faults: [{at: 12s, action: kill, server: brick2}]\n")
    assert "faults.0 at 12 s is not before the end of the load (10 s)" in e
    e = _err(
        BASE.replace("  system: {volume: v}\n", "")
        + "  faults: [{at: 1s, action: kill, server: brick1}]\n"
    )
    assert "faults need resilience.system" in e
    e = _err(BASE.replace("target: g", "target: nope"))
    assert "resilience.target 'nope' is not a target" in e
    e = _err(BASE + "  faults: [{at: 1s, action: kill, server: 'rm -rf'}]\n")
    assert "resilience.faults.0.server" in e


STATUS = """<?xml version="1.0"?><cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/>
<volStatus><volumes><volume><volName>v</volName>
<node><hostname>vm</hostname><path>/b/1</path><status>1</status><pid>11</pid></node>
<node><hostname>vm</hostname><path>/b/2</path><status>0</status><pid>-1</pid></node>
<node><hostname>Self-heal Daemon</hostname><path>localhost</path><status>1</status>
<pid>13</pid></node>
</volume></volumes></volStatus></cliOutput>"""


def test_gluster_answers_parsed() -> None:
    b = parse_status_xml(STATUS, "gluster volume status v --xml")
    assert [(x.name, x.address, x.pid, x.online) for x in b] == [
        ("brick1", "vm:/b/1", 11, True),
        ("brick2", "vm:/b/2", None, False),
    ]
    assert find_brick(b, "vm:/b/2") is b[1] and find_brick(b, "brick3") is None
    with pytest.raises(BackendError, match="gluster refused: Volume v does not exist"):
        parse_status_xml(
            "<cliOutput><opRet>-1</opRet><opErrstr>Volume v does not exist</opErrstr></cliOutput>",
            "w",
        )
    with pytest.raises(BackendError, match="not XML"):
        parse_status_xml("<!DOCTYPE x [<!ENTITY a 'b'>]><x>&a;</x>", "w")
    text = "Brick vm:/b/1\nNumber of entries: 3\n\nBrick vm:/b/2\nNumber of entries: 4\n"
    assert parse_heal_count(text) == 7
    assert parse_heal_count("Brick vm:/b/1\nStatus: Transport endpoint is not connected\n") is None


def _file(d: Path, name: str, data: bytes) -> Written:
    (d / name).write_bytes(data)
    return Written(d / name, len(data), hashlib.sha256(data).hexdigest())


def test_integrity_names_lost_short_and_corrupt_files(tmp_path: Path) -> None:
    files = [_file(tmp_path, f"f{i}", os.urandom(5 * 2**20 + i)) for i in range(6)]
    r = verify(files, threads=3)
    assert r["ok"] and r["files"] == 6 and r["bytes"] == sum(f.size for f in files)
    (tmp_path / "f1").unlink()
    with (tmp_path / "f2").open("r+b") as fh:
        fh.truncate(100)
    data = bytearray((tmp_path / "f4").read_bytes())
    data[4 * 2**20 + 7] ^= 1  # one bit, in the second buffer's worth
    (tmp_path / "f4").write_bytes(bytes(data))
    r = verify(files, threads=2)
    assert not r["ok"]
    assert [(b["file"], b["problem"]) for b in r["bad"]] == [
        ("f1", "lost"),
        ("f2", "short"),
        ("f4", "corrupt"),
    ]
    assert r["bad_bytes"] == files[1].size + files[2].size + files[4].size


def _writes(times: list[tuple[float, float, bool]]) -> list[dict[str, Any]]:
    return [
        {"event": "write", "t0": a, "t1": b, "bytes": 2**20, "ok": ok, "file": f"w{i}"}
        for i, (a, b, ok) in enumerate(times)
    ]


def test_series_and_fault_effect() -> None:
    # 4 MiB/s for 2 s, a fault at 2.0 s, nothing for 1 s but a failed write, then 4 MiB/s
    w = [(i * 0.25, i * 0.25 + 0.2, True) for i in range(8)]
    w += [(2.0, 2.9, False)]
    w += [(3.0 + i * 0.25, 3.0 + i * 0.25 + 0.2, True) for i in range(4)]
    s = series(_writes(w), 0.5, 4.0)
    assert s["t"] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
    assert s["mib_s"] == [4.0, 4.0, 4.0, 4.0, 0.0, 0.0, 4.0, 4.0]
    assert s["errors"] == [0, 0, 0, 0, 0, 1, 0, 0] and s["p99_ms"][5] is None
    eff = fault_effect(s, 0.5, 2.0)
    assert eff["before_mib_s"] == pytest.approx(4.0)  # bins 0 .. 1.5
    assert eff["lowest_mib_s"] == 0.0
    assert eff["throughput_back_s"] == pytest.approx(1.5)  # the bin 3.0-3.5 reaches 80%


def test_summary_flags_and_schema() -> None:
    recs: list[dict[str, Any]] = [
        {"event": "start", "target": "g", "duration": 2.0, "interval": 0.5, "writers": 1},
        *_writes([(0.1, 0.2, True), (0.3, 0.4, True)]),
        {"event": "fault", "action": "kill", "server": "brick1", "at": 0.5, "t": 1.8, "ok": True},
        {
            "event": "recovered",
            "cause": "end of load",
            "online_s": 0.1,
            "healed_s": 0.3,
            "ok": True,
        },
        {
            "event": "integrity",
            "files": 2,
            "bytes": 2 * 2**20,
            "bad": [],
            "bad_bytes": 0,
            "ok": True,
            "read_after": "page cache",
        },
    ]
    r = summarise(recs)
    assert r is not None and r["ok"] and r["writes"] == 2 and r["bytes_written"] == 2 * 2**20
    assert [f["rule"] for f in validity_flags(r)] == ["fault_late", "integrity_cached"]
    assert summarise(recs[:-1])["ok"] is False  # type: ignore[index]  # never verified
    doc = {"schema": "gridbench.io/1", "matrix": [], "resilience": r, "resilience_ok": True}
    assert validate_metrics(doc)["resilience"]["writes"] == 2
    bad = {**doc, "resilience": {**r, "integrity": {"ok": "yes"}}}
    with pytest.raises(ResultsError, match=r"resilience\.integrity\.ok"):
        validate_metrics(bad)


def test_missing_gluster_command_is_one_clear_error() -> None:
    from gridbench.io.resilience import prepare_servers

    spec, _ = load_io_spec_text(
        BASE.replace("system: {volume: v}", "system: {volume: v, cli: [/nonexistent/gluster]}")
        + "  faults: [{at: 1s, action: kill, server: brick1}]\n",
        "s.yaml",
    )
    assert spec.resilience is not None
    with pytest.raises(BackendError) as ei:
        prepare_servers(spec.resilience)
    assert ei.value.message == "the gluster command was not found"
    assert ei.value.where == "spec field 'resilience.system.cli'"


def test_max_bytes_caps_the_load_and_is_checked_as_free_space(tmp_path: Path) -> None:
    from gridbench.io.metrics import analyze_and_write
    from gridbench.io.report import build_report
    from gridbench.io.runner import IoRunner, needed_bytes

    text = (
        f"name: cap\ntargets: [{{name: d, path: {tmp_path / 't'}}}]\niozone: {{enabled: false}}\n"
        "resilience: {target: d, duration: 2s, writers: 2, file_size: 64k, max_bytes: 1M}\n"
    )
    (tmp_path / "t").mkdir()
    spec, data = load_io_spec_text(text, "s.yaml")
    assert needed_bytes(spec, "d") == 2**20 and needed_bytes(spec) == 2**20
    m = analyze_and_write(IoRunner(spec, data, tmp_path / "results").execute())
    r = m["resilience"]
    # no system: the load and the integrity check on a plain directory, no faults
    assert r["writes"] == 16 and r["bytes_written"] == 2**20 and r["faults"] == []
    assert r["integrity"]["ok"] and r["integrity"]["files"] == 16 and m["resilience_ok"]
    assert r["capped_s"] is not None and r["capped_s"] < 2.0
    texts = [f.text for f in build_report(m).headline.findings]
    assert any(t.startswith("the writers reached max_bytes") for t in texts), texts


def test_cleanup_finds_what_was_left_paused_or_down() -> None:
    from gridbench.io.resilience_cleanup import left_down

    recs: list[dict[str, Any]] = [
        {"event": "fault", "action": "pause", "server": "brick1", "ok": True, "pid": 5},
        {"event": "fault", "action": "resume", "server": "brick1", "ok": True},
        {"event": "fault", "action": "kill", "server": "brick2", "ok": True, "pid": 6},
        {"event": "fault", "action": "pause", "server": "brick3", "ok": True, "pid": 7},
        {"event": "fault", "action": "stop", "server": "brick4", "ok": False, "pid": 8},
    ]
    assert sorted(left_down(recs)) == ["brick2", "brick3"]  # a failed fault left nothing
    assert left_down([*recs, {"event": "restore", "servers": ["brick2", "brick3"]}]) == {}
