"""The store's index (gridbench.store.index) and the list's rows (gridbench.listing): a
list of a large store reads one summary per run from ``ROOT/.index.json`` and never a
run's record unless it changed; a missing, damaged, hostile or stale index is rebuilt; a
small store (or one gridbench may not write) is listed without one. The rows are what
the records give, whichever way they were read."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, cli_env
from gridbench import listing
from gridbench.store.index import INDEX_FILE, INDEX_FROM


def make_store(root: Path, n: int) -> list[Path]:
    """``n`` runs of three families, job flow's with its own fields."""
    runs = []
    for i in range(n):
        run = root / f"2026{i // 28 % 12 + 1:02d}{i % 28 + 1:02d}T000000Z-run-{i}"
        run.mkdir(parents=True)
        exp: dict[str, Any] = {
            "id": run.name,
            "name": f"run-{i}",
            "status": "complete",
            "created": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00",
            "verdict": "pass" if i % 3 else "fail",
        }
        if i % 3 == 0:
            exp |= {"backend": "local", "load_model": "open", "trials_done": 2, "trials_planned": 3}
        elif i % 3 == 1:
            exp |= {"kind": "io", "targets": [{"name": "a"}, {"name": "b"}], "baseline": "a"}
        else:
            exp |= {"kind": "study", "tools": ["x", "y"], "delivery": "import"}
        (run / "experiment.json").write_text(json.dumps(exp))
        runs.append(run)
    return runs


def fresh_rows(root: Path) -> list[dict[str, Any]]:
    """The rows made from every record, with no index at all."""
    (root / INDEX_FILE).unlink(missing_ok=True)
    rows = []
    for p in sorted(root.iterdir()):
        if p.is_dir():
            rows.append({**listing.summary(p), "path": str(p)})
    rows.sort(key=lambda e: str(e.get("created", "")), reverse=True)
    return rows


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every run folder summarised from its record (the index could not answer)."""
    seen: list[Path] = []
    real = listing.summary

    def summary(path: Path) -> dict[str, Any]:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(listing, "summary", summary)
    return seen


def test_a_large_store_is_listed_from_its_index(tmp_path: Path, counted: list[Path]) -> None:
    root = tmp_path / "results"
    runs = make_store(root, INDEX_FROM + 8)
    first = listing.catalogue(root)
    assert len(counted) == len(runs) and (root / INDEX_FILE).is_file()
    counted.clear()
    assert listing.catalogue(root) == first and counted == []  # no record read
    assert first == fresh_rows(root)
    by_name = {Path(r["path"]).name: r for r in first}
    jf, io, study = (by_name[runs[i].name] for i in range(3))
    assert (jf["kind"], jf["target"], jf["variant"]) == ("jobflow", "local", "open")
    assert jf["columns"] == [["trials", "2/3", True]] and jf["search"] == ["local", "open"]
    assert (io["kind"], io["target"], io["variant"]) == ("io", "a, b", "storage vs a")
    assert (study["target"], study["variant"]) == ("x, y", "study (import)")


def test_a_changed_new_or_removed_run_is_seen(tmp_path: Path, counted: list[Path]) -> None:
    root = tmp_path / "results"
    runs = make_store(root, INDEX_FROM + 2)
    listing.catalogue(root)
    counted.clear()
    exp = json.loads((runs[5].parent / runs[5].name / "experiment.json").read_text())
    exp["status"], exp["verdict"] = "failed", "fail"
    (runs[5] / "experiment.json").write_text(json.dumps(exp))  # same size, other content
    new = make_store(tmp_path / "more", 1)[0]
    os.rename(new, root / "20300101T000000Z-new")
    for f in runs[7].iterdir():
        f.unlink()
    runs[7].rmdir()
    rows = listing.catalogue(root)
    assert sorted(p.name for p in counted) == sorted([runs[5].name, "20300101T000000Z-new"])
    names = {Path(r["path"]).name: r for r in rows}
    assert names[runs[5].name]["status"] == "failed" and runs[7].name not in names
    assert rows == fresh_rows(root)


@pytest.mark.parametrize(
    "index",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"format": "gridbench.index/1", "stamp": "another gridbench", "runs": {}}',
        b'{"format": "gridbench.index/0", "runs": {}}',
        b"\xff\xfe",
        b'{"format": "gridbench.index/1", "stamp": "@", "runs": {"x": {"key": "nope"}}}',
        b"[" * 100_000,
    ],
    ids=["empty", "text", "list", "stamp", "format", "binary", "keys", "deep"],
)
def test_a_damaged_index_is_rebuilt(tmp_path: Path, counted: list[Path], index: bytes) -> None:
    root = tmp_path / "results"
    make_store(root, INDEX_FROM)
    expected = listing.catalogue(root)
    (root / INDEX_FILE).write_bytes(index.replace(b'"@"', json.dumps(listing._stamp()).encode()))
    counted.clear()
    assert listing.catalogue(root) == expected
    assert len(counted) == INDEX_FROM  # every row made again
    doc = json.loads((root / INDEX_FILE).read_text())  # and the index written again
    assert doc["format"] == "gridbench.index/1" and len(doc["runs"]) == INDEX_FROM


def test_hostile_rows_in_the_index_are_not_shown(tmp_path: Path, counted: list[Path]) -> None:
    """A row of the wrong shape (a name that is a number, a column that is not a cell) is
    made again from the record rather than shown."""
    root = tmp_path / "results"
    runs = make_store(root, INDEX_FROM)
    expected = listing.catalogue(root)
    doc = json.loads((root / INDEX_FILE).read_text())
    doc["runs"][runs[0].name]["row"]["name"] = 42
    doc["runs"][runs[1].name]["row"]["columns"] = [["trials", 3, True]]
    doc["runs"][runs[2].name]["row"] = "x"
    doc["runs"][runs[3].name]["key"] = [1, 2, 3, True]
    (root / INDEX_FILE).write_text(json.dumps(doc))
    counted.clear()
    assert listing.catalogue(root) == expected
    assert sorted(p.name for p in counted) == sorted(r.name for r in runs[:4])


def test_a_planted_link_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    root = tmp_path / "results"
    make_store(root, INDEX_FROM)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("keep")
    (root / INDEX_FILE).symlink_to(elsewhere)
    rows = listing.catalogue(root)
    assert len(rows) == INDEX_FROM and elsewhere.read_text() == "keep"


def test_a_small_store_keeps_no_index(tmp_path: Path) -> None:
    root = tmp_path / "results"
    make_store(root, INDEX_FROM - 1)
    assert len(listing.catalogue(root)) == INDEX_FROM - 1
    assert not (root / INDEX_FILE).exists()


def test_a_store_gridbench_may_not_write_is_listed(tmp_path: Path) -> None:
    root = tmp_path / "results"
    make_store(root, INDEX_FROM)
    with read_only(root):
        assert len(listing.catalogue(root)) == INDEX_FROM
        assert not (root / INDEX_FILE).exists()


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` unwritable even for root: a read-only bind mount of itself (root
    ignores a folder's mode), or its mode for anyone else."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        with pytest.raises(OSError):  # the mount holds
            (folder / "probe").write_text("x")
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_list_and_list_json_show_the_rows(tmp_path: Path) -> None:
    root = tmp_path / "results"
    runs = make_store(root, INDEX_FROM + 1)
    for _ in range(2):  # the index made, then read
        p = subprocess.run(
            [str(BIN), "list", "--json"], env=cli_env(root), capture_output=True, text=True
        )
        assert p.returncode == 0, p.stderr
        rows = json.loads(p.stdout)
        assert [Path(r["path"]).name for r in rows][-1] == runs[0].name  # newest first
        assert {r["kind"] for r in rows} == {"jobflow", "io", "study"}
        p = subprocess.run([str(BIN), "list"], env=cli_env(root), capture_output=True, text=True)
        assert p.returncode == 0 and "storage vs a" in p.stdout and "2/3" in p.stdout, p.stderr


def test_an_index_that_cannot_be_written_is_done_without(tmp_path: Path) -> None:
    """A folder where the index would go (root writes anything, so this stands for a
    store gridbench may not write): the list is made from the records, every time."""
    root = tmp_path / "results"
    make_store(root, INDEX_FROM)
    (root / INDEX_FILE).mkdir()
    assert listing.catalogue(root) == fresh_rows_keeping(root)
    assert (root / INDEX_FILE).is_dir()


def fresh_rows_keeping(root: Path) -> list[dict[str, Any]]:
    rows = [{**listing.summary(p), "path": str(p)} for p in root.iterdir() if p.name != INDEX_FILE]
    return sorted(rows, key=lambda e: str(e.get("created", "")), reverse=True)
