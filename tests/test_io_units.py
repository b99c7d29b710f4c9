"""gridbench io, pure parts: sizes, spec errors, fio JSON+ parsing (of real fio output),
histograms, speedups, matrix, concurrency first/last done, thresholds, bonnie++ CSV."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gridbench.errors import ResultsError, SpecError
from gridbench.io.analysis import concurrency, evaluate_thresholds, matrix, speedup
from gridbench.io.bonnie import parse_bonnie_csv
from gridbench.io.fio import FioJob, job_file_text
from gridbench.io.load import load_io_spec_text
from gridbench.io.matrix import iozone_options, job_options, ordered_tests
from gridbench.io.model import IozoneSpec
from gridbench.io.parse import Histogram, extract_json, parse_fio, parse_fio_text
from gridbench.io.units import format_size, parse_size

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


def test_thresholds() -> None:
    entries = matrix([_row("nfs", "write", 100), _row("cand", "write", 40)], "nfs")
    res = evaluate_thresholds(
        entries,
        [
            {
                "test": "write",
                "target": None,
                "min_speedup": -0.5,
                "min_kbps": None,
                "max_p99_ms": None,
            }
        ],
        "nfs",
    )
    assert [r["ok"] for r in res] == [False] and "speedup -0.6" in res[0]["detail"]
    res = evaluate_thresholds(
        entries,
        [{"test": "write", "target": "cand", "min_kbps": 10, "min_speedup": None, "max_p99_ms": 5}],
        "nfs",
    )
    assert res[0]["ok"]
    res = evaluate_thresholds(entries, [{"test": "read", "target": None, "min_kbps": 1}], "nfs")
    assert not res[0]["ok"] and res[0]["detail"] == "no such result"


def test_bonnie_csv() -> None:
    b = parse_bonnie_csv("noise\n" + BONNIE_LINE + "\n", "bonnie++ ...")
    assert b["output_char"] == {"kbps": 1995.0, "cpu_pct": 90.0, "note": ""}
    assert b["input_char"]["kbps"] == 2124.0 and b["input_char"]["cpu_pct"] == 66.0
    assert b["output_block"]["kbps"] is None and "+++++" in b["output_block"]["note"]
    with pytest.raises(ResultsError, match="no CSV"):
        parse_bonnie_csv("Writing a byte at a time...done\n", "cmd")
    with pytest.raises(ResultsError, match="unknown bonnie"):
        parse_bonnie_csv("0.5" + BONNIE_LINE[4:], "cmd")


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


def test_html_report_escapes_hostile_text() -> None:
    from gridbench.io.html import render_html

    evil = "<script>alert(1)</script>"
    m = {
        "schema": "gridbench.io/1",
        "name": evil,
        "status": "completed",
        "baseline": "a",
        "speedup_formula": "f",
        "repetitions": 1,
        "iozone": {},
        "thresholds_ok": True,
        "consistency_ok": True,
        "targets": [{"name": "a", "path": evil, "notes": [evil]}],
        "matrix": matrix([_row("a", "write", 10)], "a"),
        "consistency": [{"target": "a", "check": evil, "ok": True, "seconds": 0.1, "detail": evil}],
    }
    page = render_html(m)
    assert evil not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "cdn.plot.ly" not in page and "Content-Security-Policy" in page


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
    assert needed_bytes(spec, "a") == 3 * 4 * 2**20  # 3 clients x separate 4 MiB files
    assert needed_bytes(spec, "b") == 64 * 2**20  # the HTTP comparison copy lands on b
