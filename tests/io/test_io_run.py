"""gridbench io end to end on real targets: a local directory against a tmpfs mount,
with fio, results on disk, reports, thresholds, and the safety rules."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.cli import main
from io_fixtures import small_tmpfs, tmpfs  # noqa: F401 (fixture)

SPEC = """\
name: local-vs-tmpfs
targets:
  - {{name: disk, path: {disk}}}
  - {{name: ram, path: {ram}}}
baseline: disk
repetitions: 2
cache: direct
iozone: {{file_size: 2M, record_size: 64k, include_flush: true}}
thresholds:
  - {{test: write, target: ram, min_kbps: 1}}
"""


def supports_direct_probe(d: Path) -> bool:
    try:
        fd = os.open(d / "probe", os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(fd)
    (d / "probe").unlink()
    return True


def gb(*args: str, results: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=timeout
    )


@dataclass
class Out:
    returncode: int
    stdout: str
    stderr: str


def gbi(*args: str, results: Path, capsys: pytest.CaptureFixture[str]) -> Out:
    """The CLI in-process (its start-up cost is paid once per test session)."""
    code = main([*args, "--results", str(results)] if args[1] in ("run", "report") else list(args))
    cap = capsys.readouterr()
    return Out(code, cap.out, cap.err)


def no_traceback(p: subprocess.CompletedProcess[str] | Out) -> None:
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr


def _spec(tmp: Path, text: str) -> Path:
    p = tmp / "io.yaml"
    p.write_text(text)
    return p


def _run_dir(results: Path) -> Path:
    [d] = [p for p in results.iterdir() if (p / "experiment.json").exists()]
    return d


def test_local_vs_tmpfs(tmp_path: Path, tmpfs: Path) -> None:  # noqa: F811
    disk = tmp_path / "disk"
    disk.mkdir()
    results = tmp_path / "results"
    spec = _spec(tmp_path, SPEC.format(disk=disk, ram=tmpfs))
    p = gb("io", "run", str(spec), "--verbose", results=results)  # the full tables
    no_traceback(p)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "speedup = (candidate − baseline) / baseline" in p.stdout
    assert "[CI ±" in p.stdout  # 2 repetitions: mean ±sd and the 95% CI half-width
    run = _run_dir(results)
    exp = json.loads((run / "experiment.json").read_text())
    assert exp["kind"] == "io" and exp["status"] == "complete"  # one vocabulary (states)
    used = {t["name"]: t["cache_used"] for t in exp["targets"]}
    # tmpfs takes O_DIRECT only on newer kernels; otherwise caches are dropped instead,
    # and the report says so
    assert used["disk"] == "direct" and used["ram"] == (
        "direct" if supports_direct_probe(tmpfs) else "drop_caches"
    )
    ram_notes = next(t["notes"] for t in exp["targets"] if t["name"] == "ram")
    if used["ram"] != "direct":
        assert any("O_DIRECT not supported" in n for n in ram_notes)
        assert any("smaller than RAM" in n for n in ram_notes)
    # rows and raw fio output are on disk: 9 tests x 2 targets x 2 repetitions
    rows = [json.loads(x) for x in (run / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 36
    assert (
        len(list((run / "raw").glob("*.json"))) == 36
        and len(list((run / "raw").glob("*.fio"))) == 36
    )
    # the job files fio ran are kept; include_flush (-e) is end_fsync on the writes only
    disk_write = (run / "raw" / "0001-disk-r0-write.fio").read_text()
    assert "rw=write" in disk_write and "direct=1" in disk_write
    assert "end_fsync=1" in disk_write
    assert "end_fsync" not in (run / "raw" / "0003-disk-r0-read.fio").read_text()
    m = json.loads((run / "metrics.json").read_text())
    cells = {(e["target"], e["test"]): e for e in m["matrix"]}
    assert [e["test"] for e in m["matrix"] if e["target"] == "disk"] == [
        "write",
        "rewrite",
        "read",
        "reread",
        "random_read",
        "random_write",
        "backward_read",
        "record_rewrite",
        "stride_read",
    ]
    for (target, test), e in cells.items():
        assert e["kbps"]["n"] == 2 and e["kbps"]["mean"] > 0, (target, test)
        assert e["lat_ms"]["p50"] is not None and e["lat_ms"]["p99"] >= e["lat_ms"]["p50"]
        if target == "ram":
            base = cells[("disk", test)]["kbps"]["mean"]
            assert e["speedup"] == pytest.approx((e["kbps"]["mean"] - base) / base)
    # every I/O is in the histograms: 2 MiB / 64 KiB = 32 per run
    assert all(sum(r["hist"][1]) == 32 for r in rows if r["test"] not in ("stride_read",))
    assert m["thresholds"] and m["thresholds"][0]["ok"]
    html = (run / "report.html").read_text()
    assert "Backward read" in html and "Plotly" in html and "cdn.plot.ly" not in html
    assert "speedup = (candidate" in html
    # the work directories are gone; the targets are as empty as before
    assert list(disk.iterdir()) == [] and list(tmpfs.iterdir()) == []
    # report re-analyses from disk; a failing threshold gives exit 1
    spec2 = _spec(
        tmp_path, SPEC.format(disk=disk, ram=tmpfs).replace("min_kbps: 1", "min_kbps: 1e12")
    )
    (run / "spec.yaml").write_text(spec2.read_text())
    p = gb("io", "report", str(run), results=results)
    assert p.returncode == 1 and "FAIL" in p.stdout


def test_refuses_root_and_nonempty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    spec = _spec(tmp_path, "name: x\ntargets: [{name: r, path: /}]\niozone: {file_size: 1M}\n")
    p = gbi("io", "run", str(spec), results=results, capsys=capsys)
    no_traceback(p)
    assert p.returncode == 2 and "refusing to benchmark the root directory" in p.stderr
    full = tmp_path / "full"
    full.mkdir()
    (full / "precious.txt").write_text("keep me")
    spec = _spec(
        tmp_path,
        f"name: x\ntargets: [{{name: f, path: {full}}}]\niozone: "
        f"{{file_size: 1M, tests: [write]}}\nrepetitions: 1\n",
    )
    p = gbi("io", "run", str(spec), results=results, capsys=capsys)
    assert p.returncode == 2 and "already holds data" in p.stderr and "--force" in p.stderr
    assert not results.exists() or not any(results.iterdir())  # nothing started
    p = gbi("io", "run", str(spec), "--force", results=results, capsys=capsys)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(x.name for x in full.iterdir()) == ["precious.txt"]
    assert (full / "precious.txt").read_text() == "keep me"
    p = gbi(
        "io",
        "run",
        str(spec),
        "--set",
        "targets.0.path=/nonexistent-gb",
        results=results,
        capsys=capsys,
    )
    assert p.returncode == 2 and "does not exist" in p.stderr


def test_free_space_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mnt = small_tmpfs(tmp_path, "4m")
    try:
        spec = _spec(
            tmp_path, f"name: x\ntargets: [{{name: s, path: {mnt}}}]\niozone: {{file_size: 16M}}\n"
        )
        p = gbi("io", "run", str(spec), results=tmp_path / "results", capsys=capsys)
        no_traceback(p)
        assert p.returncode == 2 and "not enough free space" in p.stderr and "16M" in p.stderr
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_fio_failures_name_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "t"
    d.mkdir()
    results = tmp_path / "results"
    base = (
        f"name: x\ntargets: [{{name: t, path: {d}}}]\nrepetitions: 1\n"
        "iozone: {file_size: 1M, tests: [write]"
    )
    p = gbi(
        "io",
        "run",
        str(_spec(tmp_path, base + "}\nfio: /nonexistent/fio\n")),
        results=results,
        capsys=capsys,
    )
    no_traceback(p)
    assert p.returncode == 3 and "fio binary '/nonexistent/fio' not found" in p.stderr
    p = gbi(
        "io",
        "run",
        str(_spec(tmp_path, base + ", ioengine: nosuchengine}\n")),
        results=results,
        capsys=capsys,
    )
    no_traceback(p)
    out = p.stdout + p.stderr
    assert p.returncode == 3, out
    assert "fio failed" in out and "--output-format=json+" in out and "nosuchengine" in out
    assert "ioengine is not available" in out
    run = _run_dir(results)
    assert json.loads((run / "experiment.json").read_text())["status"] == "failed"
    assert list(d.iterdir()) == []  # cleaned up after the failure
    # garbage where fio's JSON should be: a parse error naming the file and command
    (run / "rows.jsonl").write_text('{"kind": "iozone", "target": 1}\n')
    p = gbi("io", "report", str(run), results=results, capsys=capsys)
    no_traceback(p)
    assert p.returncode == 2 and "rows.jsonl:1" in p.stderr


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = gbi(
        "io",
        "validate",
        str(_spec(tmp_path, "name: x\ntargets: [{name: t, path: /tmp, colour: red}]\n")),
        results=tmp_path,
        capsys=capsys,
    )
    no_traceback(p)
    assert p.returncode == 2 and "io.yaml:2" in p.stderr and "colour" in p.stderr


def test_validate_notes_targets_this_host_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid spec whose targets 'io run' here would refuse: still valid (it may be meant
    for another host), each refused target named with its reason and fix."""
    full, empty = tmp_path / "full", tmp_path / "empty"
    full.mkdir()
    empty.mkdir()
    (full / "data.bin").write_bytes(b"x")
    targets = [("full", full), ("gone", tmp_path / "gone"), ("root", "/"), ("ok", empty)]
    listed = ", ".join(f"{{name: {n}, path: {p}}}" for n, p in targets)
    spec = _spec(tmp_path, f"name: x\ntargets: [{listed}]\n")
    p = gbi("io", "validate", str(spec), results=tmp_path, capsys=capsys)
    no_traceback(p)
    out = " ".join(p.stdout.split())  # rich wraps long lines
    assert p.returncode == 0 and "is a valid io spec (4 targets" in out, out
    assert "target 'full'" in out and "already holds data (1 entries, e.g. 'data.bin')" in out
    assert "target 'gone'" in out and "does not exist" in out
    assert "target 'root'" in out and "root directory" in out
    assert out.count("'io run' here refuses it") == 3 and "target 'ok'" not in out
    assert "fix: create it" in out
    # the target's own force counts, as 'io run' counts it
    forced = _spec(tmp_path, f"name: x\ntargets: [{{name: full, path: {full}, force: true}}]\n")
    p = gbi("io", "validate", str(forced), results=tmp_path, capsys=capsys)
    assert p.returncode == 0 and "note:" not in p.stdout, p.stdout


def test_latency_log_series(tmp_path: Path) -> None:
    from gridbench.io.load import load_io_spec_text
    from gridbench.io.metrics import analyze_and_write
    from gridbench.io.runner import IoRunner

    d = tmp_path / "t"
    d.mkdir()
    spec, data = load_io_spec_text(
        f"name: l\ntargets: [{{name: t, path: {d}}}]\nrepetitions: 1\ncache: none\n"
        "iozone: "
        "{file_size: 1M, record_size: 16k, tests: [write, random_read], latency_log: true,"
        " include_close: false}\n"
    )
    run = IoRunner(spec, data, tmp_path / "results").execute()
    m = analyze_and_write(run)
    # fio always times close(): asking otherwise is noted, not silently ignored
    [t] = m["targets"]
    assert any("include_close: false cannot be honoured" in n for n in t["notes"])
    assert any("smaller than RAM" in n for n in t["notes"])  # cache: none, 1 MiB file
    series = {(x["test"], x["direction"]): x for x in m["latency_series"]}
    assert set(series) == {("write", "write"), ("random_read", "read")}
    for x in series.values():
        assert x["n"] == 64 and sum(x["ios"]) == 64  # 1 MiB / 16 KiB, every I/O logged
        assert 0 < x["p50_ms"] <= x["p99_ms"]
    assert not list((run.path / "raw").glob("*lat.1.log"))  # summarised, then removed
    from gridbench.io.report import build_report
    from gridbench.report import render_page

    assert "Latency over time" in render_page(build_report(m))


def test_ctrl_c_cleans_up_and_keeps_results(tmp_path: Path) -> None:
    import signal
    import time

    d = tmp_path / "t"
    d.mkdir()
    results = tmp_path / "results"
    # big enough that fio is still running when the interrupt comes
    spec = _spec(
        tmp_path,
        f"name: c\ntargets: [{{name: t, path: {d}}}]\nrepetitions: 50\ncache: none\n"
        "iozone: {file_size: 64M, record_size: 4k, tests: [write, random_read]}\n",
    )
    proc = subprocess.Popen(
        [str(BIN), "io", "run", str(spec)],
        env=cli_env(results),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    t0 = time.monotonic()
    while not (list(results.glob("*/rows.jsonl")) and any(d.iterdir())):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < 120, "the run did not start"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in out + err
    assert proc.returncode == 130, out + err
    run = _run_dir(results)
    assert json.loads((run / "experiment.json").read_text())["status"] == "aborted"
    assert (run / "rows.jsonl").read_text().strip()  # what was measured is kept
    assert (run / "report.html").exists()
    assert list(d.iterdir()) == []  # and the target is clean
    # no fio (main or forked job process) outlives the run; zombies don't count
    left = []
    for proc_dir in Path("/proc").iterdir():
        try:
            cmdline = (proc_dir / "cmdline").read_bytes().decode(errors="replace")
            state = (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(results) in cmdline and state != "Z":
            left.append(proc_dir.name)
    assert left == [], f"fio processes left running: {left}"
