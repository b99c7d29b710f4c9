"""gridbench io, pure parts: sizes, spec errors, fio JSON+ parsing (of real fio output),
histograms, speedups, matrix, concurrency first/last done, thresholds, bonnie++ CSV."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gridbench.errors import ResultsError, SpecError
from gridbench.io.analysis import (
    concurrency,
    matrix,
    speedup,
    table_keys,
    threshold_document,
    threshold_scopes,
)
from gridbench.io.bonnie import parse_bonnie_csv
from gridbench.io.fio import FioJob, job_file_text
from gridbench.io.load import load_io_spec_text
from gridbench.io.matrix import iozone_options, job_options, ordered_tests
from gridbench.io.model import IozoneSpec, LegacyThreshold
from gridbench.io.parse import Histogram, extract_json, parse_fio, parse_fio_text
from gridbench.thresholds import evaluate_thresholds
from gridbench.units import format_size, parse_size

# A line bonnie++ 2.00a printed here (bonnie++ -s 16 -r 8 -n 0 -u root -q).
BONNIE_LINE = (
    "1.98,2.00a,vm,1,1795333572,16M,,8192,5,1995,90,+++++,+++,+++++,+++,2124,66,+++++,+++,"
    "+++++,+++,,,,,,,,,,,,,,,,,,11183us,4073us,8063us,10386us,4060us,13982us,,,,,,"
)


def test_sizes() -> None:
    assert parse_size("128k") == 131072
    assert parse_size("2G") == 2 * 1024**3
    assert parse_size("1.5GiB") == int(1.5 * 1024**3)
    assert parse_size(4096) == 4096
    with pytest.raises(ValueError):
        parse_size("lots")
    with pytest.raises(ValueError):
        parse_size(True)
    assert format_size(131072) == "128k" and format_size(2 * 1024**3) == "2G"


GOOD = """\
name: t
targets:
  - {name: a, path: /tmp/a}
  - {name: b, path: /tmp/b}
baseline: a
iozone: {file_size: 4M, record_size: 128k}
"""


def test_spec_defaults_are_the_seeds() -> None:
    spec, _ = load_io_spec_text("name: t\ntargets: [{name: a, path: /x}]\n")
    assert spec.iozone.file_size == 2 * 1024**3 and spec.iozone.record_size == 128 * 1024
    assert spec.iozone.include_close and not spec.iozone.include_flush
    assert spec.http is None and spec.cache == "direct"


def test_spec_errors_name_line_and_fix() -> None:
    with pytest.raises(SpecError) as ei:
        load_io_spec_text(GOOD + "iozon: {}\n", "s.yaml")
    assert (
        "s.yaml:7" in str(ei.value) and "iozon" in str(ei.value) and "docs/io.md" in str(ei.value)
    )
    with pytest.raises(SpecError) as ei:
        load_io_spec_text(GOOD.replace("baseline: a", "baseline: zz"), "s.yaml")
    assert "baseline 'zz' is not a target" in str(ei.value)
    with pytest.raises(SpecError) as ei:
        load_io_spec_text(GOOD.replace("4M", "4100k"), "s.yaml")
    assert "whole number of records" in str(ei.value)
    with pytest.raises(SpecError) as ei:
        load_io_spec_text(GOOD.replace("record_size: 128k", "record_size: huge"), "s.yaml")
    assert "s.yaml:6" in str(ei.value)
    spec, _ = load_io_spec_text(GOOD, "s.yaml", ["iozone.file_size=8M"])
    assert spec.iozone.file_size == 8 * 1024**2
    with pytest.raises(SpecError) as ei:  # past 1 EiB: a slip, and sums would leave int64
        load_io_spec_text(GOOD, "s.yaml", ["iozone.file_size=1e308"])
    assert "larger than 1 EiB" in str(ei.value) and "iozone.file_size" in str(ei.value)
    two = "targets: [{name: a, path: /x/}, {name: b, path: /x}]\nbaseline: a\n"
    with pytest.raises(SpecError) as ei:  # their work folders would collide
        load_io_spec_text("name: t\n" + two, "s.yaml")
    assert "two targets measure the same path: /x" in str(ei.value)


def test_iozone_mapping() -> None:
    spec = IozoneSpec(
        file_size=4 * 2**20, record_size=128 * 1024, tests=["read", "write", "backward_read"]
    )
    assert ordered_tests(spec) == ["write", "read", "backward_read"]
    assert iozone_options("backward_read", spec)["rw"] == "read:-262144"
    rr = iozone_options("record_rewrite", spec)
    assert rr["rw"] == "write:-131072" and rr["number_ios"] == 32
    assert iozone_options("stride_read", spec)["rw"] == f"read:{16 * 131072}"
    assert "end_fsync" not in iozone_options("write", spec)
    assert "fsync_on_close" not in iozone_options("write", spec)  # fio times close anyway
    flush = IozoneSpec(file_size=2**20, record_size=2**16, include_flush=True)
    assert iozone_options("rewrite", flush)["end_fsync"] is True
    assert iozone_options("record_rewrite", flush)["end_fsync"] is True
    assert "end_fsync" not in iozone_options("read", flush)


def test_job_file_rejects_injection() -> None:
    text = job_file_text([FioJob("w", {"rw": "write", "direct": True})], {"group_reporting": False})
    assert text == "[global]\ngroup_reporting=0\n[w]\nrw=write\ndirect=1\n"
    with pytest.raises(Exception, match="newline"):
        job_file_text([FioJob("w", {"directory": "/tmp/x\n[evil]\nfilename=/etc/passwd"})], {})


def _real_fio(tmp_path: Path, test: str = "write") -> str:
    spec = IozoneSpec(file_size=2 * 2**20, record_size=64 * 1024)
    opts = job_options(test, spec, directory=str(tmp_path), direct=False)
    jf = tmp_path / "j.fio"
    jf.write_text(job_file_text([FioJob(test, opts)], {}))
    p = subprocess.run(
        ["fio", "--output-format=json+", str(jf)], capture_output=True, text=True, check=True
    )
    return p.stdout


def test_parse_real_fio_json_plus(tmp_path: Path) -> None:
    out = _real_fio(tmp_path)
    [r] = parse_fio_text(out, "w.json")
    assert r.direction == "write" and r.bytes == 2 * 2**20
    assert r.kbps > 0 and r.iops > 0
    assert r.hist.total == 32  # 2 MiB in 64 KiB records: every I/O is in the histogram
    p = r.lat_ms
    assert p["p50"] is not None and p["p99"] is not None and 0 < p["p50"] <= p["p99"]
    # fio's own percentiles agree with ours from its histogram (same nearest-rank rule,
    # up to fio's bin width)
    ours = r.hist.percentiles((50.0, 99.0))
    assert ours[0] is not None and abs(ours[0] / 1e6 - p["p50"]) / p["p50"] < 0.05


def test_parse_skips_preamble_and_rejects_garbage() -> None:
    doc = {
        "jobs": [
            {
                "jobname": "x",
                "error": 0,
                "write": {
                    "io_bytes": 1024,
                    "bw": 10,
                    "iops": 1,
                    "runtime": 100,
                    "lat_ns": {"mean": 1e6, "bins": {"1000000": 1}},
                },
            }
        ]
    }
    text = "<vm> c: Laying out IO file\n\n" + json.dumps(doc)
    assert extract_json(text, "x")["jobs"][0]["jobname"] == "x"
    [r] = parse_fio_text(text, "x")
    assert r.lat_ms["p99"] == pytest.approx(1.0)
    with pytest.raises(ResultsError, match="no JSON"):
        extract_json("fio: engine nosuch not loadable\n", "cmd")
    with pytest.raises(ResultsError, match="not valid JSON"):
        extract_json('{"jobs": [', "cmd")
    with pytest.raises(ResultsError, match="failed with error 28"):
        parse_fio({"jobs": [{"jobname": "w", "error": 28}]}, "cmd")
    with pytest.raises(ResultsError, match="no jobs"):
        parse_fio({"jobs": "nope"}, "cmd")


def test_client_mode_drops_all_clients_aggregate() -> None:
    j = {
        "jobname": "c",
        "error": 0,
        "hostname": "h",
        "read": {"io_bytes": 10, "bw": 1, "runtime": 1},
    }
    rs = parse_fio({"client_stats": [j, {**j, "jobname": "All clients"}]}, "x")
    assert len(rs) == 1 and rs[0].client == "h"


def test_histogram_merge_and_percentiles() -> None:
    a = Histogram.from_bins({"1000": 1, "3000": 1})
    b = Histogram.from_bins({"2000": 2, "1000": 1})
    m = a.merged(b)
    assert m.ns.tolist() == [1000, 2000, 3000] and m.counts.tolist() == [2, 2, 1]
    assert m.percentiles((50.0, 100.0)) == [2000.0, 3000.0]
    assert Histogram().percentiles((50.0,)) == [None]
    assert Histogram.from_bins({"x": 1}).total == 0  # foreign junk: no histogram


def test_speedup_is_signed() -> None:
    assert speedup(50.0, 100.0) == -0.5
    assert speedup(150.0, 100.0) == 0.5
    assert speedup(1.0, 0.0) is None and speedup(None, 1.0) is None


def _row(target: str, test: str, kbps: float, rep: int = 0, **kw: object) -> dict[str, object]:
    return {
        "kind": "iozone",
        "target": target,
        "test": test,
        "rep": rep,
        "kbps": kbps,
        "bytes": 1,
        "runtime_s": 1.0,
        "hist": [[1e6, 2e6], [1, 1]],
        **kw,
    }


def test_matrix_mean_sd_ci_and_speedup() -> None:
    rows = [
        _row("nfs", "write", 100, 0),
        _row("nfs", "write", 120, 1),
        _row("cand", "write", 55, 0),
        _row("cand", "write", 65, 1),
        _row("cand", "read", 1, 0),
    ]
    m = {(e["target"], e["test"]): e for e in matrix(rows, "nfs")}
    c = m[("cand", "write")]
    assert c["kbps"]["mean"] == 60 and c["kbps"]["std"] == pytest.approx(np.std([55, 65], ddof=1))
    assert c["kbps"]["ci95"] is not None and c["kbps"]["ci95"] > c["kbps"]["std"]
    assert c["baseline_kbps"] == 110 and c["speedup"] == pytest.approx((60 - 110) / 110)
    assert m[("nfs", "write")]["speedup"] is None
    assert m[("cand", "read")]["speedup"] is None  # no baseline figure for read
    assert c["lat_ms"]["p50"] == pytest.approx(1.0) and c["lat_ms"]["p99"] == pytest.approx(2.0)


def test_concurrency_first_and_last_done() -> None:
    base = {
        "kind": "concurrency",
        "target": "t",
        "test": "write",
        "clients": 2,
        "files": "separate",
        "rep": 0,
    }
    rows = [
        {
            **base,
            "client": "local",
            "job": "w.0",
            "bytes": 1024 * 100,
            "runtime_s": 1.0,
            "kbps": 100,
        },
        {
            **base,
            "client": "local",
            "job": "w.1",
            "bytes": 1024 * 100,
            "runtime_s": 2.0,
            "kbps": 50,
        },
    ]
    [c] = concurrency(rows)
    assert c["last_done_kbps"]["mean"] == pytest.approx(200 / 2.0)  # all bytes / slowest
    assert c["first_done_kbps"]["mean"] == pytest.approx(100 + 50)  # sum of client rates
    assert c["finish_spread_s"] == pytest.approx(1.0)
    assert sorted(c["per_client_kbps"].values()) == [50, 100]


def _io_thresholds(
    entries: list[dict[str, Any]], legacy: dict[str, Any], baseline: str | None
) -> list[dict[str, Any]]:
    """An old-form io threshold, translated and evaluated as io/metrics.py does."""
    targets = sorted({e["target"] for e in entries})
    ths = LegacyThreshold.model_validate(legacy).translate(targets, baseline)
    scopes = threshold_scopes(threshold_document(entries))
    return [table_keys(r, targets) for r in evaluate_thresholds(ths, scopes)]


def test_thresholds() -> None:
    entries = matrix([_row("nfs", "write", 100), _row("cand", "write", 40)], "nfs")
    res = _io_thresholds(
        entries,
        {
            "test": "write",
            "target": None,
            "min_speedup": -0.5,
            "min_kbps": None,
            "max_p99_ms": None,
        },
        "nfs",
    )
    assert [r["ok"] for r in res] == [False] and "speedup -0.6" in res[0]["detail"]
    res = _io_thresholds(
        entries,
        {"test": "write", "target": "cand", "min_kbps": 10, "min_speedup": None, "max_p99_ms": 5},
        "nfs",
    )
    assert res[0]["ok"]
    assert all(r["ok"] for r in res) and len(res) == 2  # one result per limit now
    res = _io_thresholds(entries, {"test": "read", "target": None, "min_kbps": 1}, "nfs")
    assert not res[0]["ok"] and res[0]["detail"].startswith("no such result")


def test_bonnie_csv() -> None:
    b = parse_bonnie_csv("noise\n" + BONNIE_LINE + "\n", "bonnie++ ...")
    assert b["output_char"] == {"kbps": 1995.0, "cpu_pct": 90.0, "note": ""}
    assert b["input_char"]["kbps"] == 2124.0 and b["input_char"]["cpu_pct"] == 66.0
    assert b["output_block"]["kbps"] is None and "+++++" in b["output_block"]["note"]
    with pytest.raises(ResultsError, match="no CSV"):
        parse_bonnie_csv("Writing a byte at a time...done\n", "cmd")
    with pytest.raises(ResultsError, match="unknown bonnie"):
        parse_bonnie_csv("0.5" + BONNIE_LINE[4:], "cmd")
    assert "seq_create" not in b  # -n 0: no file tests, no file columns


# bonnie++ 2.00a here: -s 4 -r 2 -n 4:1024:1024:2 -u root -q (the file tests run).
BONNIE_FILES_LINE = (
    "1.98,2.00a,gridbench,1,1795924254,4M,,8192,5,1878,90,+++++,+++,+++++,+++,2790,89,+++++,"
    "+++,+++++,+++,4,1024,1024,,2,1490,69,+++++,+++,357,1,+++++,+++,+++++,+++,416,1,10679us,"
    "23us,8us,9341us,2us,6171us,12096us,8023us,17782us,8038us,4050us,9166us"
)


def test_bonnie_file_tests_csv_and_argv(tmp_path: Path) -> None:
    from gridbench.io.bonnie import bonnie_argv
    from gridbench.io.model import BonnieSpec

    b = parse_bonnie_csv(BONNIE_FILES_LINE, "cmd")
    assert b["output_char"]["kbps"] == 1878.0
    assert b["seq_create"] == {"per_s": 1490.0, "cpu_pct": 69.0, "note": ""}
    assert b["seq_delete"]["per_s"] == 357.0 and b["ran_delete"]["per_s"] == 416.0
    assert b["seq_stat"]["per_s"] is None and "+++++" in b["seq_stat"]["note"]
    assert b["ran_create"]["per_s"] is None and b["ran_stat"]["per_s"] is None
    spec = BonnieSpec(size=4 * 2**20, files=4, file_size=1024, dirs=2)
    argv = bonnie_argv(spec, tmp_path)
    assert argv[argv.index("-n") + 1] == "4:1024:1024:2"
    plain = bonnie_argv(BonnieSpec(size=4 * 2**20), tmp_path)
    assert plain[plain.index("-n") + 1] == "0"
    one = bonnie_argv(BonnieSpec(size=4 * 2**20, files=1), tmp_path)
    assert one[one.index("-n") + 1] == "1:0:0:1"


def test_cache_modes(tmp_path: Path) -> None:
    from gridbench.io.cache import cache_warning, choose_mode

    assert choose_mode("direct", tmp_path).used == "direct"  # a disk directory takes O_DIRECT
    assert choose_mode("drop_caches", tmp_path).used == "drop_caches"  # tests run as root
    assert choose_mode("none", tmp_path).used == "none"
    gib = 2**30
    w = cache_warning(2 * gib, "none", ram=8 * gib)
    assert w is not None and "smaller than RAM" in w and "read, re-read" in w
    assert "re-read figures" in (cache_warning(2 * gib, "drop_caches", ram=8 * gib) or "")
    assert cache_warning(16 * gib, "none", ram=8 * gib) is None
    assert cache_warning(2 * gib, "direct", ram=8 * gib) is None


def _offsets(tmp_path: Path, test: str, spec: IozoneSpec) -> list[tuple[str, int]]:
    """The (op, offset) sequence fio really issues for one iozone test (fio's I/O log)."""
    opts = dict(job_options(test, spec, directory=str(tmp_path), direct=False))
    opts["allow_file_create"] = True
    log = tmp_path / f"{test}.iolog"
    opts["write_iolog"] = str(log)
    jf = tmp_path / "j.fio"
    jf.write_text(job_file_text([FioJob(test, opts)], {}))
    subprocess.run(["fio", "--output-format=json", str(jf)], capture_output=True, check=True)
    out = []
    for line in log.read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 5 and parts[2] in ("read", "write"):
            out.append((parts[2], int(parts[3])))
    return out


def test_fio_really_does_what_iozone_did(tmp_path: Path) -> None:
    bs = 64 * 1024
    spec = IozoneSpec(file_size=8 * bs, record_size=bs, stride=3)
    assert [o for _, o in _offsets(tmp_path, "write", spec)] == [i * bs for i in range(8)]
    back = [o for _, o in _offsets(tmp_path, "backward_read", spec)]
    assert len(back) == 8
    # after the first record fio wraps to the end and walks back one record per read
    assert back[1:] == sorted(back[1:], reverse=True) and back[1] - back[2] == bs
    rr = _offsets(tmp_path, "record_rewrite", spec)
    assert rr == [("write", 0)] * 8  # the same record, rewritten
    stride = [o for _, o in _offsets(tmp_path, "stride_read", spec)]
    assert stride[:3] == [0, 3 * bs, 6 * bs]  # every third record
    assert len(stride) * bs == 8 * bs  # io_size: the file's worth of data in total


def test_cache_effects_from_reread_vs_read() -> None:
    from gridbench.io.analysis import cache_effects

    entries = matrix(
        [
            _row("nfs", "read", 100),
            _row("nfs", "reread", 900),
            _row("ram", "read", 100),
            _row("ram", "reread", 110),
            _row("x", "write", 5),
        ],
        None,
    )
    eff = {c["target"]: c for c in cache_effects(entries)}
    assert set(eff) == {"nfs", "ram"}  # no read/re-read pair for x: nothing claimed
    assert eff["nfs"]["cached"] and eff["nfs"]["reread_over_read"] == 9.0
    assert "served from a cache" in eff["nfs"]["statement"]
    assert not eff["ram"]["cached"] and "no cache effect" in eff["ram"]["statement"]


def test_needed_bytes_covers_every_writer() -> None:
    from gridbench.io.runner import needed_bytes

    spec, _ = load_io_spec_text(
        GOOD + "concurrency: {enabled: true, clients: [1, 3]}\n"
        "http: {url: 'http://h/dav/', sizes: [64M], compare_target: b}\n"
    )
    # the largest phase: each phase's files are removed before the next one starts
    # (test_io_concurrency.py checks that the iozone file is gone during concurrency)
    assert needed_bytes(spec, "a") == 3 * 4 * 2**20  # 3 clients x separate 4 MiB files
    assert needed_bytes(spec, "b") == 64 * 2**20  # the HTTP comparison copy lands on b


# --- review fixes ---------------------------------------------------------------------


def _fake_fio(tmp_path: Path, body: str) -> Path:
    """A stand-in fio executable (a real process) that misbehaves as ``body`` says: the
    only way to make fio print unreadable JSON or hang on demand."""
    import sys

    exe = tmp_path / "fake-fio"
    exe.write_text(
        f"#!{sys.executable}\nimport sys, time\n"
        "out = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--output=')][0]\n" + body
    )
    exe.chmod(0o755)
    return exe


def _quick_spec(tmp_path: Path, fio: Path, extra: str = "") -> Path:
    target = tmp_path / "target"
    target.mkdir()
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"name: q\ntargets: [{{name: a, path: {target}}}]\nrepetitions: 1\ncache: none\n"
        f"iozone: {{file_size: 64k, record_size: 64k, tests: [write]}}\nfio: {fio}\n" + extra
    )
    return spec


def test_fio_json_garbage_is_a_backend_failure_with_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gridbench.cli import main

    fio = _fake_fio(tmp_path, "open(out, 'w').write('{\"jobs\": [')\n")
    spec = _quick_spec(tmp_path, fio)
    code = main(["io", "run", str(spec), "--results", str(tmp_path / "res")])
    said = capsys.readouterr().out
    assert code == 3, said  # a backend failure, not "bad input" (2)
    [run] = list((tmp_path / "res").iterdir())
    assert (run / "report.html").exists()  # the report is still written
    exp = json.loads((run / "experiment.json").read_text())
    assert exp["status"] == "failed" and "not valid JSON" in exp["error"]
    assert str(fio) in exp["error"]  # names the fio command
    assert list((tmp_path / "target").iterdir()) == []


def test_fio_timeout_names_the_command(tmp_path: Path) -> None:
    from gridbench.errors import BackendError
    from gridbench.io.fio import fio_timeout
    from gridbench.io.load import load_io_spec
    from gridbench.io.runner import IoRunner

    fio = _fake_fio(tmp_path, "time.sleep(60)\n")
    spec, data = load_io_spec(_quick_spec(tmp_path, fio, "fio_timeout: 1s\n"))
    with pytest.raises(BackendError) as ei:
        IoRunner(spec, data, tmp_path / "res").execute()
    assert "did not finish within 1 s" in str(ei.value) and str(fio) in str(ei.value)
    default, _ = load_io_spec_text(GOOD)
    assert fio_timeout(default, 100 * 2**20) == pytest.approx(120 + 100)  # 1 MiB/s floor


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("concurrency: {enabled: true, clients: []}", "concurrency.clients"),
        ("concurrency: {tests: []}", "concurrency.tests"),
        ("iozone: {tests: []}", "iozone.tests"),
        ("http: {url: 'http://h/', sizes: []}", "http.sizes"),
        ("thresholds: [{test: reed, min_kbps: 1}]", "thresholds.0.test"),
        ("thresholds: [{test: read}]", "at least one of min_kbps"),
        ("bonnie: {size: 10M, ram: 8M}", "at least twice bonnie.ram"),
        ("bonnie: {file_size: 4k}", "set bonnie.files"),
        ("bonnie: {files: 2000}", "bonnie.files"),
        ("bonnie: {files: 1, dirs: 0}", "bonnie.dirs"),
        ("bonnie: {files: 1, file_size: 2G}", "bonnie.file_size"),
    ],
)
def test_empty_lists_and_bad_limits_are_refused(extra: str, said: str) -> None:
    base = "name: t\ntargets: [{name: a, path: /x}]\n"
    with pytest.raises(SpecError, match=re.escape(said)):
        load_io_spec_text(base + extra + "\n", "s.yaml")


def test_empty_target_path_is_refused() -> None:
    with pytest.raises(SpecError, match=r"targets\.0\.path"):
        load_io_spec_text("name: t\ntargets: [{name: a, path: ''}]\n", "s.yaml")


def test_url_credentials_refused_and_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    from gridbench.io.http import basic_auth

    base = "name: t\ntargets: [{name: a, path: /x}]\n"
    with pytest.raises(SpecError) as ei:
        load_io_spec_text(base + "http: {url: 'http://u:s3cr3t@h/dav/'}\n", "s.yaml")
    assert "s3cr3t" not in str(ei.value) and "auth_env" in str(ei.value)
    spec, _ = load_io_spec_text(base + "http: {url: 'http://h/dav/', auth_env: DAV_AUTH}\n")
    assert spec.http is not None
    monkeypatch.delenv("DAV_AUTH", raising=False)
    with pytest.raises(Exception, match="DAV_AUTH is not set") as ei2:
        basic_auth(spec.http)
    monkeypatch.setenv("DAV_AUTH", "u:pa:ss")
    assert basic_auth(spec.http) == ("u", "pa:ss")
    monkeypatch.setenv("DAV_AUTH", "nocolon")
    with pytest.raises(Exception, match="DAV_AUTH") as ei2:
        basic_auth(spec.http)
    assert "nocolon" not in str(ei2.value)


def test_separate_files_differ_across_servers() -> None:
    from gridbench.io.runner import server_jobs

    opts: dict[str, str | int | bool] = {"filename_format": "gridbench-conc.$jobnum.dat"}
    plan = server_jobs("write", opts, 3, ["h1", "h2", "h3,9000"])
    assert [srv for srv, _ in plan] == ["h1", "h2", "h3,9000"]
    names = [j.options["filename_format"] for _, j in plan]
    assert len(set(names)) == 3 and all("$jobnum" in str(n) for n in names)
    plan = server_jobs("write", {"filename": "same.dat"}, 3, ["h1", "h2"])
    assert [j.options["numjobs"] for _, j in plan] == [2, 1]
    assert all("filename_format" not in j.options for _, j in plan)


def test_colon_in_target_path_is_escaped_for_fio(tmp_path: Path) -> None:
    d = tmp_path / "a:b"
    d.mkdir()
    spec = IozoneSpec(file_size=2 * 2**16, record_size=2**16)
    opts = job_options("write", spec, directory=str(d), direct=False)
    assert opts["directory"] == str(d).replace(":", "\\:")
    jf = tmp_path / "j.fio"
    jf.write_text(job_file_text([FioJob("write", opts)], {}))
    subprocess.run(["fio", "--output-format=json", str(jf)], capture_output=True, check=True)
    assert [p.name for p in d.iterdir()] == ["gridbench-iozone.dat"]  # in the directory
    assert not (tmp_path / "a").exists()  # not split at ':' into a/ and b/


def test_visibility_seen_at_once_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gridbench.io import consistency
    from gridbench.io.model import ConsistencySpec
    from gridbench.io.safety import make_workdir

    t = make_workdir("a", tmp_path, "r1")
    # a frozen clock: a change visible at the first look has a delay of exactly 0.0 s
    monkeypatch.setattr(consistency.time, "monotonic", lambda: 100.0)
    res = consistency.visibility_checks(ConsistencySpec(timeout=1.0, file_size=4096), t, tmp_path)
    assert res and all(r["ok"] and r["seconds"] == 0.0 for r in res)
    assert "not seen" not in " ".join(r["detail"] for r in res)


def test_fill_stops_at_its_bound_and_needs_a_mount_point(tmp_path: Path) -> None:
    from gridbench.io.consistency import fill_check, fill_until_refused
    from gridbench.io.model import ConsistencySpec
    from gridbench.io.report_checks import consistency_table
    from gridbench.io.safety import make_workdir

    f = tmp_path / "fill.bin"
    written, err = fill_until_refused(f, 3 * 2**20 + 5, 60.0)
    assert err is None and written == f.stat().st_size == 3 * 2**20 + 5
    assert f.read_bytes()[:4096] != bytes(4096)  # random data, not zeros
    t = make_workdir("a", tmp_path, "r1")  # tmp_path is not a mount point
    res = fill_check(ConsistencySpec(fill=True, max_fill=2**60), t)
    assert res["ok"] is None and "not a mount point" in res["detail"]
    assert list(t.workdir.iterdir()) == []
    table = consistency_table({"consistency": [{"target": "a", **res}]})
    assert table is not None and table.text is not None
    rows = table.text
    assert rows[0][2] == "NOT RUN"


def test_cache_effect_in_none_mode_with_small_file() -> None:
    from gridbench.io.analysis import cache_effects

    entries = matrix([_row("a", "read", 100), _row("a", "reread", 110)], None)
    gib = 2**30
    [e] = cache_effects(entries, {"a": "none"}, file_size=gib, ram=8 * gib)
    assert e["cached"] and "served from the page cache" in e["statement"]
    [e] = cache_effects(entries, {"a": "drop_caches"}, file_size=gib, ram=8 * gib)
    assert not e["cached"] and "no cache effect" in e["statement"]
    [e] = cache_effects(entries, {"a": "none"}, file_size=16 * gib, ram=8 * gib)
    assert not e["cached"]


def test_bonnie_ram_note() -> None:
    from gridbench.io.bonnie import ram_note
    from gridbench.io.model import BonnieSpec

    b = BonnieSpec(size=64 * 2**20)
    note = ram_note(b, 8 * 2**30)
    assert note is not None and "smaller than twice RAM" in note
    assert ram_note(BonnieSpec(size=16 * 2**30), 8 * 2**30) is None


def test_http_rates_are_mib_per_second() -> None:
    from gridbench.io.http import _row
    from gridbench.io.report_tables import HTTP_COLUMNS

    r = _row(3 * 2**20, 0, "upload", 2.0, True)
    assert r["mib_s"] == pytest.approx(1.5)
    header = [c.title for c in HTTP_COLUMNS]
    assert "MiB/s (mean ±sd)" in header


def test_fs_copy_read_is_not_served_from_cache(tmp_path: Path) -> None:
    from gridbench.io.http import Payload, _fs_once
    from gridbench.io.safety import make_workdir

    t = make_workdir("a", tmp_path, "r1")
    rows = _fs_once(t, Payload(2**20), "x.bin", 0)
    read = next(r for r in rows if r["op"] == "fs_read:a")
    assert read["ok"] and read["detail"] == "read after: caches dropped"  # tests run as root


def test_concurrency_first_done_is_labelled_an_estimate() -> None:
    from gridbench.io.report_tables import CONCURRENCY_COLUMNS

    header = [c.title for c in CONCURRENCY_COLUMNS]
    assert any("first done" in h and "estimate" in h for h in header)


def test_missing_fio_and_template_messages() -> None:
    from gridbench.errors import BackendError
    from gridbench.io.fio import find_fio

    with pytest.raises(BackendError) as ei:
        find_fio("no-such-fio-binary")
    assert "no-such-fio-binary --output-format=json+" in str(ei.value)
    with pytest.raises(SpecError) as si:
        load_io_spec_text("- just a list\n", "s.yaml")
    example = re.search(r"examples/io-[\w-]+\.yaml", str(si.value))
    assert example is not None
    assert (Path(__file__).parents[2] / example.group(0)).is_file()
