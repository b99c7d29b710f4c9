"""The io resilience phase against a real GlusterFS replica-3 volume (tests/gluster_fixtures):
bricks killed and paused mid-write, brought back, the volume healed, every byte verified;
and bytes corrupted or removed behind the file system's back are caught and fail the run."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gluster_fixtures import GlusterVolume
from gridbench.cli import main
from gridbench.io.family import FAMILY
from gridbench.io.gluster import parse_heal_count
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.report import build_report
from gridbench.io.runner import IoRunner
from gridbench.web.app import create_app
from gridbench.web.dashboard import WebConfig


def _spec(v: GlusterVolume, body: str, name: str = "res") -> str:
    cli = ", ".join(v.cli)
    return (
        f"name: {name}\ntargets: [{{name: gfs, path: {v.mount}, force: true}}]\n"
        "repetitions: 1\niozone: {enabled: false}\n"
        f"resilience:\n  target: gfs\n  system: {{volume: {v.volume}, cli: [{cli}]}}\n{body}"
    )


def _run(tmp_path: Path, text: str) -> tuple[dict[str, Any], Path]:
    spec, data = load_io_spec_text(text, "io.yaml")
    run = IoRunner(spec, data, tmp_path / "results").execute()
    return analyze_and_write(run), run.path


def _brick_pids(v: GlusterVolume) -> dict[str, str]:
    out = v.gluster("volume", "status", v.volume, "--xml")
    import defusedxml.ElementTree as ET

    root = ET.fromstring(out)
    return {
        str(n.findtext("path")): str(n.findtext("pid"))
        for n in root.iter("node")
        if str(n.findtext("path")).startswith("/")
    }


def test_bricks_killed_and_paused_mid_write_all_data_verified(
    tmp_path: Path,
    gluster_volume: GlusterVolume,
) -> None:
    v = gluster_volume
    before = _brick_pids(v)
    m, run = _run(
        tmp_path,
        _spec(
            v,
            "  duration: 8s\n  writers: 2\n  file_size: 1M\n  faults:\n"
            "    - {at: 1.5s, action: kill, server: brick2}\n"
            "    - {at: 3.5s, action: restart, server: brick2}\n"
            f"    - {{at: 4.5s, action: pause, server: '{v.host}:{v.bricks[2]}'}}\n"
            f"    - {{at: 6.5s, action: resume, server: brick3}}\n",
        ),
    )
    r = m["resilience"]
    assert m["status"] == "complete" and m["resilience_ok"] is True
    assert FAMILY.exit_code(m) == 0
    # the kill was real: brick2 runs as a new process now, the paused one as before
    after = _brick_pids(v)
    assert after[str(v.bricks[1])] != before[str(v.bricks[1])]
    assert after[str(v.bricks[2])] == before[str(v.bricks[2])]
    faults = {f["action"]: f for f in r["faults"]}
    assert [f["action"] for f in r["faults"]] == ["kill", "restart", "pause", "resume"]
    assert all(f["ok"] for f in r["faults"]), r["faults"]
    assert faults["kill"]["server"] == "brick2" and faults["pause"]["server"] == "brick3"
    assert faults["kill"]["before_mib_s"] > 0
    # each server brought back was online and healed again, and that was timed
    causes = sorted(x["cause"] for x in r["recoveries"])
    assert causes == ["end of load", "restart brick2", "resume brick3"]
    assert all(x["ok"] and x["healed_s"] >= x["online_s"] >= 0 for x in r["recoveries"])
    # every byte written was read back through the mount and matched its checksum
    integ = r["integrity"]
    assert integ["ok"] is True and integ["bad"] == []
    assert integ["files"] == r["writes"] > 10
    assert integ["bytes"] == r["bytes_written"] == r["writes"] * 1024**2
    assert integ["read_after"] == "caches dropped"
    written = [
        json.loads(line)
        for line in (run / "resilience.jsonl").read_text().splitlines()
        if '"write"' in line
    ]
    assert sum(w["bytes"] for w in written if w["ok"]) == r["bytes_written"]
    assert sum(r["series"]["mib_s"]) * r["interval"] * 2**20 == r["bytes_written"]
    # the report shows it: headline, fault table, chart
    rep = build_report(m)
    texts = [f.text for f in rep.headline.findings]
    assert any(t.startswith(f"integrity: all {integ['files']} files") for t in texts), texts
    ids = {s.id for s in rep.sections}
    assert {"resilience-faults", "resilience-recovery", "resilience-overtime"} <= ids
    web = TestClient(create_app(WebConfig(run.parent)), base_url="http://127.0.0.1")
    page = web.get(f"/experiments/{run.name}").text  # the dashboard, no page of its own
    assert 'id="table-resilience-faults"' in page and "around the faults" in page
    assert list(v.mount.iterdir()) == []  # the work directory is removed afterwards


def _corrupt_behind_its_back(v: GlusterVolume, run_root: Path, done: list[str]) -> None:
    """Once two files are written, flip bytes of the first in every brick's copy and
    remove the second from every brick: the file system is not told."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        runs = list(run_root.glob("*/resilience.jsonl"))
        lines = runs[0].read_text().splitlines() if runs else []
        ok = [json.loads(x) for x in lines if '"write"' in x and '"ok": true' in x]
        if len(ok) >= 2:
            first, second = ok[0]["file"], ok[1]["file"]
            for b in v.bricks:
                [wd] = list(b.glob("gridbench-io-*"))
                with (wd / "resilience" / first).open("r+b") as fh:
                    fh.seek(1000)
                    byte = fh.read(1)
                    fh.seek(1000)
                    fh.write(bytes([byte[0] ^ 0xFF]))
                (wd / "resilience" / second).unlink()
            done += [first, second]
            return
        time.sleep(0.05)


def test_corrupt_and_lost_bytes_fail_the_run_and_are_named(
    tmp_path: Path,
    gluster_volume: GlusterVolume,
) -> None:
    v = gluster_volume
    done: list[str] = []
    t = threading.Thread(target=_corrupt_behind_its_back, args=(v, tmp_path / "results", done))
    t.start()
    m, _ = _run(tmp_path, _spec(v, "  duration: 3s\n  writers: 1\n  file_size: 256k\n"))
    t.join()
    assert len(done) == 2, "the corruption thread found no written file"
    first, second = done
    integ = m["resilience"]["integrity"]
    assert integ["ok"] is False and m["resilience_ok"] is False
    problems = {b["file"]: b["problem"] for b in integ["bad"]}
    assert problems == {first: "corrupt", second: "lost"}
    assert integ["bad_bytes"] == 2 * 256 * 1024
    assert FAMILY.exit_code(m) == 1 and FAMILY.verdict(m).startswith("fail")
    [head] = [f for f in build_report(m).headline.findings if "integrity" in f.text]
    assert head.status == "fail"
    assert f"{first} corrupt" in head.text and f"{second} lost" in head.text


def test_fault_on_a_server_the_volume_lacks_is_one_clear_error(
    tmp_path: Path,
    gluster_volume: GlusterVolume,
    capsys: pytest.CaptureFixture[str],
) -> None:
    v = gluster_volume
    p = tmp_path / "io.yaml"
    p.write_text(_spec(v, "  duration: 3s\n  faults: [{at: 1s, action: kill, server: brick9}]\n"))
    code = main(["io", "run", str(p), "--results", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "resilience.faults.0.server" in err and "brick9" in err and "brick1" in err
    assert "Traceback" not in err
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_cleanup_continues_a_brick_a_killed_run_left_paused(
    tmp_path: Path,
    gluster_volume: GlusterVolume,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import os
    import shutil
    import signal
    import subprocess

    import psutil

    from conftest import BIN

    v = gluster_volume
    spec = tmp_path / "io.yaml"
    spec.write_text(
        _spec(
            v,
            "  duration: 20s\n  writers: 1\n  faults: [{at: 1s, action: pause, server: brick1}]\n",
        )
    )
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [str(BIN), "io", "run", str(spec), "--results", str(results)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    pid = None
    deadline = time.monotonic() + 60
    try:
        while pid is None and time.monotonic() < deadline and proc.poll() is None:
            for f in results.glob("*/resilience.jsonl"):
                for line in f.read_text().splitlines():
                    if '"action": "pause"' in line:
                        pid = json.loads(line)["pid"]
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)  # gridbench killed mid-run: no finally runs
        proc.wait(10)
    assert pid is not None, "the run recorded no pause"
    brick = psutil.Process(pid)
    try:
        assert brick.status() == psutil.STATUS_STOPPED  # left paused by the killed run
        [run] = [p for p in results.iterdir() if p.is_dir()]
        assert main(["cleanup", str(run), "--dry-run", "--results", str(results)]) == 0
        assert "would continue pid" in " ".join(capsys.readouterr().out.split())
        assert brick.status() == psutil.STATUS_STOPPED  # a dry run signals nothing
        assert main(["cleanup", str(run), "--yes", "--results", str(results)]) == 0
        assert f"continued pid {pid}" in " ".join(capsys.readouterr().out.split())
        assert brick.status() != psutil.STATUS_STOPPED
    finally:
        brick.resume()  # the volume is shared with the other tests
    # what the killed run left on the volume goes, and the volume heals for the next test
    for d in v.mount.glob("gridbench-io-*"):
        shutil.rmtree(d)
    t0 = time.monotonic()
    asked = t0 - 60
    left = None
    while left != 0 and time.monotonic() - t0 < 120:
        if time.monotonic() - asked > 5:  # an entry marked after a crawl waits for the next
            subprocess.run(
                [*v.cli, "--mode=script", "volume", "heal", v.volume], capture_output=True
            )
            asked = time.monotonic()
        time.sleep(0.2)
        left = parse_heal_count(v.gluster("volume", "heal", v.volume, "statistics", "heal-count"))
    assert left == 0, f"the volume did not heal after the cleanup: {left} entries left"
