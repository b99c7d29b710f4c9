"""io's validity rules (io/validity.py): figures timed too briefly for fio's 1 ms run-time
resolution, and writes that only reached the page cache; stored in metrics.json and shown
by the report (a validity table and a headline warning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gridbench.hosts.sampling.compared import CLIENT_BOUND
from gridbench.io.resilience_analysis import FAULT_LATE, HOST_LOST, INTEGRITY_CACHED
from gridbench.io.validity import (
    CACHED_WRITE,
    IO_VALIDITY_RULES,
    MAX_RESOLUTION,
    MIN_RUNTIME_S,
    SHORT_RUNTIME,
    cached_write_flags,
    resolution,
    short_runtime_flags,
    validity,
)
from gridbench.sections import Statements, Table
from io_fixtures import tmpfs  # noqa: F401 (fixture)

#: the resilience phase's rules (docs/io.md, Resilience)
RESILIENCE_RULES = [FAULT_LATE, INTEGRITY_CACHED]
#: every io rule, in order (host_lost: a client host lost, io/clients_analysis.py;
#: client_bound: applied with the samples, docs/hosts.md)
ALL_RULES = [SHORT_RUNTIME, CACHED_WRITE, *RESILIENCE_RULES, HOST_LOST, CLIENT_BOUND]


def _row(
    target: str,
    test: str,
    runtime_s: float,
    *,
    kbps: float = 1000.0,
    direction: str = "read",
    rep: int = 0,
    kind: str = "iozone",
    clients: int = 1,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "target": target,
        "test": test,
        "rep": rep,
        "clients": clients,
        "direction": direction,
        "kbps": kbps,
        "bytes": 32 * 2**20,
        "runtime_s": runtime_s,
    }


def test_rules_are_declared_once_with_a_sentence_each() -> None:
    from gridbench.io.family import FAMILY

    assert [r.name for r in IO_VALIDITY_RULES] == ALL_RULES
    assert all(r.description.endswith(".") for r in IO_VALIDITY_RULES)
    assert FAMILY.validity_rules == IO_VALIDITY_RULES
    assert abs(MIN_RUNTIME_S - 0.1) < 1e-12 and MAX_RESOLUTION == 0.01


def test_resolution_is_one_ms_over_the_runtime() -> None:
    assert resolution(0.1) == pytest.approx(0.01)
    assert resolution(0.006) == pytest.approx(1 / 6)
    assert resolution(0.0) is None


def test_short_runtime_flagged_with_the_numbers() -> None:
    # the case seen with 32 MiB files: 6-7 ms runs, kB/s quantised to two levels
    rows = [
        _row("ram", "read", 0.006, kbps=32 * 1024 / 0.006, rep=0),
        _row("ram", "read", 0.007, kbps=32 * 1024 / 0.007, rep=1),
        _row("ram", "read", 0.006, kbps=32 * 1024 / 0.006, rep=2),
        _row("disk", "read", 0.5, rep=0),
        _row("disk", "read", 0.1, rep=1),  # exactly at the limit: 1% passes
    ]
    [f] = short_runtime_flags(rows)
    assert (f["rule"], f["target"], f["test"]) == (SHORT_RUNTIME, "ram", "read")
    assert f["runtime_ms"] == 6.0 and f["runtime_ms_max"] == 7.0
    assert f["resolution"] == pytest.approx(1 / 6)
    assert f["rows"] == 3 and f["short_rows"] == 3 and f["limit"] == 0.01
    assert "6–7 ms" in f["detail"] and "16.7%" in f["detail"] and "limit 1%" in f["detail"]
    v = validity(rows)
    assert v["valid"] is False and v["flags"] == [f]
    runtimes = {(g["target"], g["test"]): g for g in v["runtimes"]}
    assert runtimes[("disk", "read")]["runtime_ms"] == 100.0
    assert runtimes[("disk", "read")]["resolution"] == pytest.approx(0.01)
    assert runtimes[("disk", "read")]["short_rows"] == 0


def test_long_runtime_not_flagged() -> None:
    rows = [_row("disk", t, 2.5, rep=r) for t in ("read", "reread") for r in range(3)]
    v = validity(rows, [{"name": "disk", "cache_used": "direct"}])
    assert v["valid"] is True and v["flags"] == []
    assert [r["name"] for r in v["rules"]] == ALL_RULES


def test_zero_runtime_flagged_without_a_resolution() -> None:
    [f] = short_runtime_flags([_row("ram", "read", 0.0)])
    assert f["resolution"] is None and "0 ms" in f["detail"]


def test_concurrency_rows_flagged_per_client_count() -> None:
    rows = [
        _row("ram", "write", 0.02, kind="concurrency", clients=2, direction="write"),
        _row("ram", "write", 0.03, kind="concurrency", clients=2, direction="write"),
        _row("ram", "write", 0.3, kind="concurrency", clients=1, direction="write"),
    ]
    [f] = short_runtime_flags(rows)
    assert (f["kind"], f["clients"], f["runtime_ms"], f["rows"]) == ("concurrency", 2, 20.0, 2)


def test_cached_write_flagged() -> None:
    rows = [
        _row("a", "write", 1.0, direction="write"),
        _row("a", "read", 1.0),
        _row("b", "random_write", 1.0, direction="write"),
        _row("c", "write", 1.0, direction="write"),
        _row("d", "write", 1.0, direction="write"),  # mode not recorded: not judged
    ]
    targets = [
        {"name": "a", "cache_used": "none"},
        {"name": "b", "cache_used": "drop_caches"},
        {"name": "c", "cache_used": "direct"},
    ]
    flags = cached_write_flags(rows, targets, include_flush=False)
    assert [(f["target"], f["test"], f["cache_used"]) for f in flags] == [
        ("a", "write", "none"),
        ("b", "random_write", "drop_caches"),
    ]
    assert all(f["rule"] == CACHED_WRITE and "page cache" in f["detail"] for f in flags)
    # the flush timed (iozone -e: end_fsync) means the data reached the storage
    assert cached_write_flags(rows, targets, include_flush=True) == []
    v = validity(rows, targets)
    assert not v["valid"] and {f["rule"] for f in v["flags"]} == {CACHED_WRITE}


def _metrics_with(flags_rows: list[dict[str, Any]], targets: list[dict[str, Any]]) -> Any:
    from gridbench.io.analysis import matrix

    rows = [{**r, "hist": [[1e6], [1]]} for r in flags_rows]
    return {
        "schema": "gridbench.io/1",
        "name": "v",
        "status": "completed",
        "baseline": None,
        "speedup_formula": "f",
        "repetitions": 1,
        "iozone": {"file_size": 32 * 2**20, "record_size": 2**17, "include_flush": False},
        "targets": targets,
        "matrix": matrix(rows, None),
        "thresholds": [],
        "thresholds_ok": True,
        "consistency_ok": True,
        "validity": validity(rows, targets),
    }


def test_report_shows_flags_in_a_table_and_the_headline() -> None:
    from gridbench.io.report import build_report

    m = _metrics_with(
        [_row("ram", "read", 0.006), _row("ram", "write", 0.5, direction="write")],
        [{"name": "ram", "path": "/r", "cache_used": "none", "cache_requested": "direct"}],
    )
    report = build_report(m)
    [table] = [s for s in report.sections if isinstance(s, Table) and s.id == "validity"]
    text = {r[0]: r for r in table.text or ()}
    assert set(text) == {SHORT_RUNTIME, CACHED_WRITE}
    assert text[SHORT_RUNTIME][4:6] == ("6", "16.7%")
    assert table.row_status == ("warn", "warn")
    warns = [f for f in report.headline.findings if f.status == "warn"]
    assert len(warns) == 2 and report.headline.verdict == "warn"
    assert "less than 100 ms" in warns[0].text and "down to 6 ms" in warns[0].text
    assert "ram Read" in warns[0].evidence
    assert "page cache" in warns[1].text and "ram Write" in warns[1].evidence
    # each finding once: the flags are not repeated as further headline findings
    assert sum("100 ms" in f.text for f in report.headline.findings) == 1
    [rt] = [s for s in report.sections if isinstance(s, Table) and s.id == "runtimes"]
    assert rt.collapsed and rt.row_status == ("warn", None)


def test_report_of_valid_figures_has_no_validity_table() -> None:
    from gridbench.io.report import build_report

    m = _metrics_with(
        [_row("disk", "read", 0.5)], [{"name": "disk", "path": "/d", "cache_used": "direct"}]
    )
    report = build_report(m)
    assert "validity" not in {s.id for s in report.sections}
    assert all(f.status != "warn" for f in report.headline.findings)
    assert report.headline.verdict == "pass"
    assert not [s for s in report.sections if isinstance(s, Statements)]


def test_real_fio_run_of_a_small_file_is_flagged(tmp_path: Path, tmpfs: Path) -> None:  # noqa: F811
    """32 MiB on tmpfs through the page cache: fio's reads take a few ms, so the figures
    are flagged (with the run time and the resolution), in metrics and in the report."""
    from gridbench.io.family import FAMILY
    from gridbench.io.load import load_io_spec_text
    from gridbench.io.metrics import analyze_and_write
    from gridbench.io.runner import IoRunner

    spec, data = load_io_spec_text(
        f"name: tiny\ntargets: [{{name: ram, path: {tmpfs}}}]\nrepetitions: 2\ncache: none\n"
        "iozone: {file_size: 32M, record_size: 1M, tests: [write, read, reread]}\n"
    )
    run = IoRunner(spec, data, tmp_path / "results").execute()
    m = analyze_and_write(run)
    v = m["validity"]
    assert v["valid"] is False
    short = {f["test"]: f for f in v["flags"] if f["rule"] == SHORT_RUNTIME}
    assert short, v["runtimes"]  # 32 MiB from the page cache: well under 100 ms
    for f in short.values():
        assert f["target"] == "ram" and f["runtime_ms"] < 100
        if f["runtime_ms"] > 0:
            assert f["resolution"] == pytest.approx(1 / f["runtime_ms"])
    # cache: none and no flush timed: the write only reached the page cache
    assert any(f["rule"] == CACHED_WRITE and f["test"] == "write" for f in v["flags"])
    assert {g["test"] for g in v["runtimes"]} == {"write", "read", "reread"}

    report = FAMILY.report(run, m)
    [table] = [s for s in report.sections if isinstance(s, Table) and s.id == "validity"]
    assert {r[0] for r in table.rows} == {SHORT_RUNTIME, CACHED_WRITE}
    assert any(f.status == "warn" and "100 ms" in f.text for f in report.headline.findings)
    assert FAMILY.verdict(m) == "pass (flagged figures)"
