"""bonnie++ profile, the full-target check on a small tmpfs, and HTTP transfer timing
against nginx's WebDAV module on loopback, compared with the file-system path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.report_bonnie import bonnie_files_table, bonnie_table
from gridbench.io.runner import IoRunner
from io_fixtures import DavServer, nginx_dav, small_tmpfs, tmpfs  # noqa: F401 (fixtures)


def _run(tmp_path: Path, text: str) -> dict[str, object]:
    spec, data = load_io_spec_text(text, "io.yaml")
    return analyze_and_write(IoRunner(spec, data, tmp_path / "results").execute())


def test_bonnie_profile(tmp_path: Path, tmpfs: Path) -> None:  # noqa: F811
    disk = tmp_path / "disk"
    disk.mkdir()
    m = _run(
        tmp_path,
        f"name: b\ntargets: [{{name: disk, path: {disk}}}, {{name: ram, path: {tmpfs}}}]\n"
        "baseline: disk\nrepetitions: 1\niozone: {enabled: false}\n"
        "bonnie: {enabled: true, size: 4M, ram: 2M, files: 16}\n",
    )
    b = {(x["target"], x["column"]): x for x in m["bonnie"]}  # type: ignore[attr-defined]
    files = ("seq_create", "seq_stat", "seq_delete", "ran_create", "ran_stat", "ran_delete")
    assert set(b) == {
        (t, c)
        for t in ("disk", "ram")
        for c in ("output_char", "output_block", "rewrite", "input_char", "input_block", *files)
    }
    # the file tests (bonnie++ -n 16: 16384 empty files): files per second, never kB/s; a
    # phase too fast to time is no figure with its note, as for the throughput phases
    for t in ("disk", "ram"):
        for c in files:
            x = b[(t, c)]
            assert "kbps" not in x and (x["per_s"]["mean"] is None) == bool(x["note"])
    # each file phase is a rate > 0 or, too fast for bonnie++ to time ("+++++"), no figure
    # with its note (which phases are timed depends on the machine's disk)
    for t in ("disk", "ram"):
        for c in files:
            mean = b[(t, c)]["per_s"]["mean"]
            assert (mean is None and b[(t, c)]["note"]) or (mean is not None and mean > 0)
    for c in files:
        fc = b[("ram", c)]
        if fc["per_s"]["mean"] is None or fc["baseline_per_s"] is None:
            assert fc["speedup"] is None
        else:
            assert fc["speedup"] == pytest.approx(
                (fc["per_s"]["mean"] - fc["baseline_per_s"]) / fc["baseline_per_s"]
            )
    table = bonnie_files_table(m)
    assert table is not None and [r[0] for r in table.rows] == ["disk (baseline)", "ram", "speedup"]
    assert table.columns[1].key == "seq_create_per_s"
    seq = b[("disk", "seq_create")]["per_s"]["mean"]
    if seq is not None:  # else the cell holds the phase's "too fast to time"
        assert table.rows[0][1] == pytest.approx(seq)
    assert bonnie_table(m) is not None and "seq_create_per_s" not in [
        c.key
        for c in bonnie_table(m).columns  # type: ignore[union-attr]
    ]
    # per-char phases are slow enough for bonnie++ to time at 4 MiB; block phases may
    # print +++++ (under 500 ms), which must stay "no figure", never a number
    for t in ("disk", "ram"):
        oc = b[(t, "output_char")]
        assert oc["kbps"]["mean"] > 0 and oc["cpu_pct"] is not None
    for x in b.values():
        assert (x.get("kbps", x.get("per_s"))["mean"] is None) == bool(x["note"])
    sp = b[("ram", "output_char")]
    assert sp["speedup"] == pytest.approx(
        (sp["kbps"]["mean"] - sp["baseline_kbps"]) / sp["baseline_kbps"]
    )
    assert list(disk.iterdir()) == [] and list(tmpfs.iterdir()) == []


def test_full_target(tmp_path: Path) -> None:
    mnt = small_tmpfs(tmp_path, "8m")
    try:
        m = _run(
            tmp_path,
            f"name: f\ntargets: [{{name: small, path: {mnt}}}]\nrepetitions: 1\niozone: "
            f"{{enabled: false}}\n"
            "consistency: {enabled: true, fill: true, file_size: 64k}\n",
        )
        [fill] = [c for c in m["consistency"] if c["check"].startswith("full target")]  # type: ignore[attr-defined]
        assert fill["ok"], fill
        assert "No space left on device" in fill["detail"] and "intact" in fill["detail"]
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_fill_refused_on_large_free_space(tmp_path: Path) -> None:
    mnt = small_tmpfs(tmp_path, "8m")  # a mount point, but with more free than max_fill
    try:
        m = _run(
            tmp_path,
            f"name: f\ntargets: [{{name: big, path: {mnt}}}]\nrepetitions: 1\niozone: "
            f"{{enabled: false}}\n"
            "consistency: {enabled: true, fill: true, max_fill: 1M}\n",
        )
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    [fill] = [c for c in m["consistency"] if c["check"].startswith("full target")]  # type: ignore[attr-defined]
    # not run: neither a pass nor a failure of the run
    assert fill["ok"] is None and "not run" in fill["detail"] and "max_fill" in fill["detail"]
    assert m["consistency_ok"] is True


def test_http_dav_against_fs(tmp_path: Path, nginx_dav: DavServer) -> None:  # noqa: F811
    disk = tmp_path / "disk"
    disk.mkdir()
    m = _run(
        tmp_path,
        f"name: h\ntargets: [{{name: disk, path: {disk}}}]\nrepetitions: 1\niozone: "
        f"{{enabled: false}}\n"
        "http: "
        f"{{url: '{nginx_dav.url}', sizes: [1M, 4M], repetitions: 3, compare_target: disk}}\n",
    )
    h = {(x["size"], x["op"]): x for x in m["http"]}  # type: ignore[attr-defined]
    assert set(h) == {
        (s, op)
        for s in (2**20, 4 * 2**20)
        for op in ("upload", "download", "fs_write:disk", "fs_read:disk")
    }
    for x in h.values():
        assert x["ok"] and x["seconds"]["n"] == 3 and x["seconds"]["std"] is not None
        assert x["mib_s"]["mean"] > 0
    assert list(nginx_dav.root.iterdir()) == []  # uploads deleted afterwards
    assert list(disk.iterdir()) == []


def test_http_refused_upload_is_clear(tmp_path: Path, nginx_dav: DavServer) -> None:  # noqa: F811
    from gridbench.errors import BackendError

    d = tmp_path / "d"
    d.mkdir()
    bad = nginx_dav.url.replace("/dav/", "/nodav/")
    with pytest.raises(BackendError, match="upload refused: HTTP 405"):
        _run(
            tmp_path,
            f"name: h\ntargets: [{{name: d, path: {d}}}]\niozone: {{enabled: false}}\nhttp: "
            f"{{url: '{bad}', sizes: [1k]}}\n",
        )
    assert list(d.iterdir()) == []
