"""io's report as typed sections (io/report.py): the text of every table as io has always
shown it (kB/s mean ±sd [CI], signed speedups, PASS/FAIL/NOT RUN), raw values for
export, the headline with each finding once, the evaluation summary and the charts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gridbench.io.analysis import cache_effects, concurrency, matrix
from gridbench.io.metrics import bonnie_summary, http_summary
from gridbench.io.report import build_report
from gridbench.sections import Chart, Report, Statements, Table


def _row(target: str, test: str, kbps: float, rep: int) -> dict[str, Any]:
    return {
        "kind": "iozone",
        "target": target,
        "test": test,
        "rep": rep,
        "kbps": kbps,
        "bytes": 1,
        "runtime_s": 1.0,
        "direction": "read",
        "hist": [[1e6, 2e6], [1, 3]],
    }


def _conc(n: int, j: int, rep: int) -> dict[str, Any]:
    return {
        "kind": "concurrency",
        "target": "nfs",
        "test": "write",
        "rep": rep,
        "clients": n,
        "files": "separate",
        "client": "local",
        "job": f"j{j}",
        "kbps": 100.0 + 10 * j,
        "bytes": 1024 * 100,
        "runtime_s": 1.0 + j,
        "hist": [[1e6], [2]],
    }


def _bonnie(target: str, rep: int) -> dict[str, Any]:
    cols = ("output_char", "output_block", "rewrite", "input_char", "input_block")
    too_fast = target == "cand"
    return {
        "target": target,
        "rep": rep,
        **{
            c: {
                "kbps": None if (c == "output_char" and too_fast) else 1000.0 * (rep + 1),
                "cpu_pct": 40.0,
                "note": "+++++: under 500 ms" if (c == "output_char" and too_fast) else "",
            }
            for c in cols
        },
    }


def metrics() -> dict[str, Any]:
    rows = [
        _row("nfs", "write", 100, 0),
        _row("nfs", "write", 120, 1),
        _row("cand", "write", 150, 0),
        _row("cand", "write", 180, 1),
        _row("nfs", "read", 200, 0),
        _row("nfs", "read", 200, 1),
        _row("cand", "read", 100, 0),
        _row("cand", "read", 100, 1),
        _row("nfs", "reread", 210, 0),
        _row("nfs", "reread", 230, 1),
    ]
    mat = matrix(rows, "nfs")
    http = [
        {"size": 2**20, "op": "upload", "seconds": s, "mib_s": 1 / s, "ok": True}
        for s in (0.5, 0.25)
    ]
    return {
        "schema": "gridbench.io/1",
        "name": "nfs-vs-cand",
        "status": "completed",
        "error": None,
        "baseline": "nfs",
        "speedup_formula": "speedup = (candidate − baseline) / baseline, of the mean kB/s",
        "repetitions": 2,
        "iozone": {"file_size": 2**21, "record_size": 2**16, "include_flush": True},
        "targets": [
            {
                "name": n,
                "path": f"/mnt/{n}",
                "cache_requested": "direct",
                "cache_used": "none",
                "notes": [f"{n} note"],
            }
            for n in ("nfs", "cand")
        ],
        "matrix": mat,
        "cache_effects": cache_effects(mat, {"nfs": "none", "cand": "none"}, 2**21, 2**33),
        "concurrency": concurrency(
            [_conc(n, j, r) for r in (0, 1) for n in (1, 2) for j in range(n)]
        ),
        "bonnie": bonnie_summary([_bonnie(t, r) for t in ("nfs", "cand") for r in (0, 1)], "nfs"),
        "consistency": [
            {"target": "cand", "check": "visibility", "ok": True, "seconds": 0.25, "detail": "ok"},
            {
                "target": "cand",
                "check": "rename",
                "ok": False,
                "seconds": None,
                "detail": "not seen in 3 s",
            },
            {"target": "cand", "check": "full target", "ok": None, "detail": "not a mount point"},
        ],
        "http": http_summary(http),
        "thresholds": [
            {"test": "write", "target": "cand", "ok": True, "detail": "kB/s 165 vs limit 100"},
            {"test": "read", "target": "cand", "ok": False, "detail": "speedup -0.5 vs limit 0"},
        ],
        "thresholds_ok": False,
        "consistency_ok": False,
        "latency_cdf": [{"target": "nfs", "test": "write", "ms": [1.0, 2.0], "cdf": [0.25, 1.0]}],
        "latency_series": [
            {
                "target": "nfs",
                "test": "write",
                "rep": 0,
                "direction": "write",
                "second": [0, 1],
                "p99_ms_per_s": [1.5, 2.5],
            }
        ],
        "validity": {"valid": True, "flags": [], "runtimes": [], "max_resolution": 0.01},
    }


def _section(r: Report, id: str) -> Any:
    [s] = [s for s in r.sections if s.id == id]
    return s


def _texts(t: Table) -> list[list[str]]:
    return [list(row) for row in t.text or ()]


def test_matrix_in_the_seeds_layout_with_signed_speedups() -> None:
    r = build_report(metrics())
    t = _section(r, "matrix")
    assert isinstance(t, Table) and t.scope == "full" and not t.export
    assert [c.title for c in t.columns] == ["target", "Write", "Read", "Re-read"]
    rows = _texts(t)
    assert [row[0] for row in rows] == ["cand", "nfs (baseline)", "speedup"]
    assert rows[0][1] == "165 ±21 [CI ±191]\np50 2 / p99 2 ms"
    assert rows[1][2] == "200 ±0 [CI ±0]\np50 2 / p99 2 ms"
    assert rows[2][1:] == ["+50%", "-50%", "-"]
    sp = t.rows[2]
    assert sp[1] == pytest.approx(0.5) and sp[2] == pytest.approx(-0.5) and sp[3] is None  # raw
    assert t.rows[0][1] == pytest.approx(165.0)  # raw: the mean kB/s
    assert t.row_style == (None, None, "total")
    assert "speedup = (candidate − baseline) / baseline" in t.note
    assert "flush (fsync) in timing: True; 2 repetitions." in t.note


def test_matrix_by_test_for_the_terminal() -> None:
    t = _section(build_report(metrics()), "matrix-by-test")
    assert t.scope == "brief"
    assert [c.title for c in t.columns] == [
        "test",
        "cand kB/s",
        "cand p50/p99 ms",
        "speedup",
        "nfs kB/s (baseline)",
        "nfs p50/p99 ms",
    ]
    assert _texts(t)[0] == [
        "Write",
        "165 ±21 [CI ±191]",
        "2 / 2",
        "+50%",
        "110 ±14 [CI ±127]",
        "2 / 2",
    ]
    assert t.note.startswith("speedup = ")


def test_tidy_matrix_export_carries_every_figure() -> None:
    r = build_report(metrics())
    [x] = r.exports
    assert x.id == "matrix" and len(x.rows) == 5
    rec = {(d["target"], d["test"]): d for d in x.records()}
    assert rec[("cand", "write")]["speedup"] == pytest.approx(0.5)
    assert rec[("cand", "write")]["kbps_std"] == pytest.approx(21.2132, rel=1e-4)
    assert rec[("nfs", "read")]["repetitions"] == 2
    assert [t.id for t in r.exported()].count("matrix") == 1


def test_bonnie_table() -> None:
    t = _section(build_report(metrics()), "bonnie")
    assert [c.title for c in t.columns][:3] == ["target", "Output per char kB/s", "%CPU"]
    rows = _texts(t)
    assert rows[0][:3] == ["nfs (baseline)", "1500 ±707", "40"]
    assert rows[1][:3] == ["cand", "+++++", "40"]  # too fast to time: no figure
    assert rows[2][:5] == ["speedup", "-", "--", "+0%", "--"]
    assert t.row_style == (None, None, "total")
    assert t.note.startswith("+++++")


def test_concurrency_table_labels_first_done_an_estimate() -> None:
    t = _section(build_report(metrics()), "concurrency")
    assert any("first done" in c.title and "estimate" in c.title for c in t.columns)
    rows = _texts(t)
    assert rows[0][:4] == ["nfs", "Write", "1", "separate"]
    assert rows[1][6] == "1.000"  # finish spread s
    assert rows[1][7] == "local/j0: 100, local/j1: 110"


def test_consistency_http_threshold_and_cache_tables() -> None:
    r = build_report(metrics())
    c = _section(r, "consistency")
    assert [row[2] for row in _texts(c)] == ["PASS", "FAIL", "NOT RUN"]
    assert [row[3] for row in _texts(c)] == ["0.250", "-", "-"]
    assert c.row_status == ("pass", "fail", "info")
    h = _section(r, "http")
    assert [col.title for col in h.columns] == [
        "size",
        "operation",
        "time s (mean ±sd)",
        "MiB/s (mean ±sd)",
        "ok",
    ]
    assert _texts(h) == [["1M", "upload", "0.375 ±0.177", "3.0 ±1.4", "yes"]]
    th = _section(r, "thresholds")
    assert [row[2] for row in _texts(th)] == ["PASS", "FAIL"]
    assert th.row_status == ("pass", "fail")
    ca = _section(r, "cache")
    assert _texts(ca)[0][:4] == ["nfs", "/mnt/nfs", "direct", "none"]
    assert "served from the page cache" in _texts(ca)[0][4] and _texts(ca)[0][5] == "nfs note"
    st = _section(r, "cache-effects")
    assert isinstance(st, Statements) and st.lines[0][0] == "warn"


def test_headline_states_each_finding_once() -> None:
    r = build_report(metrics())
    texts = [f.text for f in r.headline.findings]
    assert len(texts) == len(set(texts))
    assert "thresholds: FAILED (1 of 2)" in texts
    assert "consistency checks: some FAILED (1 of 2 run)" in texts
    assert "1 consistency check(s) not run" in texts
    said = "cand against nfs: speedup -50% (Read) to +50% (Write)"  # then what noise says
    assert any(t.startswith(said) for t in texts), texts
    assert r.headline.verdict == "fail"
    fail = next(f for f in r.headline.findings if f.text.startswith("thresholds"))
    assert "read on cand: speedup -0.5 vs limit 0" in fail.evidence


def test_headline_of_a_failed_run_and_of_a_clean_one() -> None:
    m = metrics()
    m.update(status="failed", error="fio failed (exit 1)")
    r = build_report(m)
    assert r.headline.findings[0].status == "fail"
    assert r.headline.findings[0].text == "run failed: fio failed (exit 1)"
    clean = {**metrics(), "thresholds": [], "consistency": []}
    r = build_report(clean)
    assert r.headline.verdict == "pass"
    assert r.headline.findings[0].text.startswith("run completed")


def test_evaluation_summary() -> None:
    from gridbench.sections import Column

    plan = Table("test-plan", "Test plan", (Column("part"), Column("declared")), (("a", "b"),))
    r = build_report(
        metrics(),
        spec_yaml="name: nfs-vs-cand\n",
        plan=plan,
        not_tested=("Bonnie on cand",),
        experiment={"created": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:05:00Z"},
    )
    s = r.summary
    tested = dict(s.tested)
    assert tested["targets"] == "nfs (/mnt/nfs), cand (/mnt/cand)"
    assert tested["baseline"] == "nfs" and tested["repetitions"] == "2"
    assert tested["iozone tests"] == "Write, Read, Re-read; file 2M, record 64k"
    assert tested["cache mode"] == "nfs: none (requested direct); cand: none (requested direct)"
    assert tested["run"] == "2026-01-01T00:00:00Z – 2026-01-01T00:05:00Z"
    assert s.spec_yaml == "name: nfs-vs-cand\n" and s.plan is plan
    assert s.not_tested == ("Bonnie on cand",)
    assert [(f.status, f.text) for f in s.outcome][:3] == [
        ("pass", "run completed"),
        ("pass", "write on cand: kB/s 165 vs limit 100"),
        ("fail", "read on cand: speedup -0.5 vs limit 0"),
    ]
    assert any("full target not run" in x for x in s.left_open)
    assert any(x == "cand: cand note" for x in s.left_open)
    assert r.notes[0].startswith("nfs-vs-cand: iozone matrix, file 2M, record 64k")
    assert r.notes[1].startswith("speedup = ")
    assert r.meta == "gridbench.io/1 · baseline nfs" and r.data["name"] == "nfs-vs-cand"


def test_charts_are_plain_json_with_safe_labels() -> None:
    m = metrics()
    m["matrix"][0] = {**m["matrix"][0], "target": "<b>x</b>"}
    r = build_report(m)
    charts = r.charts()
    assert [c.id for c in charts] == ["bars", "latency", "overtime", "scaling"]
    assert all(isinstance(c, Chart) and c.note for c in charts)
    json.dumps([c.figure for c in charts])  # plain data, no plotly objects
    names = [d["name"] for d in charts[0].figure["data"]]
    assert "&lt;b&gt;x&lt;/b&gt;" in names  # plotly.js renders tags in labels
    assert "Latency over time" in [c.title for c in charts]


def _hostile(evil: str) -> dict[str, Any]:
    """io metrics with ``evil`` in every free-text field a report shows."""
    return {
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
        "matrix": matrix([_row("a", "write", 10, 0)], "a"),
        "consistency": [{"target": "a", "check": evil, "ok": True, "seconds": 0.1, "detail": evil}],
    }


def test_sections_hold_plain_text() -> None:
    """Renderers escape for their medium: the sections keep hostile text as it is."""
    evil = "<script>alert(1)</script>"
    m = _hostile(evil)
    r = build_report(m)
    assert r.title.startswith(evil)
    assert _texts(_section(r, "consistency"))[0][1] == evil
    assert _texts(_section(r, "matrix"))[0][0] == "a (baseline)"


def test_empty_metrics_give_a_report_without_sections() -> None:
    r = build_report({"schema": "gridbench.io/1", "name": "e", "status": "aborted"})
    assert r.sections == () and r.headline.verdict == "fail"


def test_html_report_escapes_hostile_text() -> None:
    """The page drawn from io's report by the generic renderer (was io/html.py)."""
    from gridbench.report import render_page

    evil = "<script>alert(1)</script>"
    m = _hostile(evil)
    page = render_page(build_report(m))
    assert evil not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "cdn.plot.ly" not in page and "Content-Security-Policy" in page
