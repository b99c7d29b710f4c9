"""net's report (messaging/report.py and its tables and charts) through the family seam:
the seed's ping-pong columns, overheads named in the headline, growth fits, failures,
the generic renderers (terminal, HTML, CSV/JSON) and hostile strings escaped."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gridbench.messaging.family import FAMILY
from gridbench.report import render_page, render_report, write_reports
from gridbench.sections import Chart, Report, Statements, Table
from gridbench.store.layout import RunDir
from test_net_analysis import make_run, ping, sample_records, sockperf

SEED_COLUMNS = ["Size (kiB)", "Total (ms)", "Avg (ms)", "StdDev (ms)", "StdDev (%)", "Speed (MB/s)"]
HOSTILE = "<script>alert(1)</script>"


def _report(run: RunDir) -> tuple[dict[str, Any], Report]:
    metrics = FAMILY.analyze(run)
    return metrics, FAMILY.report(run, metrics)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, dict[str, Any], Report]:
    run = make_run(tmp_path_factory.mktemp("netreport"), sample_records())
    metrics, report = _report(run)
    return run, metrics, report


def _table(report: Report, id: str) -> Table:
    return next(t for t in report.tables() if t.id == id)


def _terminal(report: Report) -> str:
    console = Console(record=True, width=240, color_system=None)
    render_report(report, console, verbose=True)
    return console.export_text()


def test_pingpong_table_in_seed_layout(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, _, report = built
    t = _table(report, "pingpong-0-tcp-host")
    assert [c.title for c in t.columns][:6] == SEED_COLUMNS
    assert [c.title for c in t.columns][6:] == [
        "One-way (ms)",
        "p50 (ms)",
        "p99 (ms)",
        "p99.9 (ms)",
        "Floor",
        "Ratio",
        "Failed",
    ]
    rec = next(r for r in t.records() if r["size_kib"] == 1.0)
    i = t.records().index(rec)
    assert rec["avg_ms"] == pytest.approx(1.172) and rec["total_ms"] == pytest.approx(14.064)
    assert t.text is not None
    text = dict(zip([c.key for c in t.columns], t.text[i], strict=True))
    assert text["avg_ms"] == "1.172" and text["speed_mb_s"] == "1.747"
    assert text["total_ms"] == "14.06" and text["one_way_ms"] == "0.586"
    assert text["floor"] == "0.39 ms (sockperf)" and text["ratio"] == "3.01×"
    assert text["p99_ms"] == "–"  # 12 round trips cannot carry a p99
    assert t.row_status is not None and t.row_status[i] == "warn"
    failed = t.records().index(next(r for r in t.records() if r["size_kib"] == 2.0))
    assert t.text[failed][-1] == "1 of 2" and t.row_status[failed] == "fail"


def test_headline_names_overheads_fits_and_failures(
    built: tuple[RunDir, dict[str, Any], Report],
) -> None:
    _, _, report = built
    texts = [f.text for f in report.headline.findings]
    assert (
        "overhead above the network: tcp between two processes on the host: median RTT 1.17 ms at "
        "1 KiB is 3.0× the network's 0.39 ms (sockperf)"
    ) in texts
    assert any(t.startswith("overhead above the network: scp between two processes") for t in texts)
    assert any("mean latency grows quadratically" in t for t in texts)
    assert "1 figure(s) with failed tests or repetitions" in texts
    assert "1 environment(s) with figures left without a floor (it could not be measured)" in texts
    assert report.headline.verdict == "warn"
    growth = next(s for s in report.sections if isinstance(s, Statements) and s.id == "growth")
    assert growth.lines[0][1].endswith("a + b·x² (quadratic) over 5 client counts, R² 1")
    assert sum("mean latency grows quadratically" in t for t in texts) == 1  # stated once


def test_summary_and_sections(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, _, report = built
    tested = dict(report.summary.tested)
    assert tested["environments"] == "host, lan"
    assert tested["ping-pong"] == "tcp; sizes 1 KiB to 1 MiB (3); 3 tests × 4 round trips"
    assert tested["floor"] == "iperf3, sockperf; overhead above 2× the floor"
    assert any("percentiles withheld" in x for x in report.summary.left_open)
    assert any("sockperf could not be measured" in x for x in report.summary.left_open)
    ids = {t.id for t in report.tables()}
    assert {"overheads", "echo", "echo-scaling", "burst", "transfer", "floor", "validity"} <= ids
    # the burst's enqueue time twice, clearly labelled: wall and the client's CPU
    burst = _table(report, "burst")
    titles = [c.title for c in burst.columns]
    assert "Enqueue wall (ms)" in titles and "Enqueue CPU (ms)" in titles
    row = burst.rows[0]
    assert row[titles.index("Enqueue wall (ms)")] == pytest.approx(2.0)
    assert row[titles.index("Enqueue CPU (ms)")] == pytest.approx(1.5)
    charts = {c.id: c for c in report.charts()}
    assert set(charts) == {"rtt-size", "speed-size", "echo-scaling", "burst-timeline", "transfer"}
    rtt = charts["rtt-size"].figure
    assert rtt["layout"]["xaxis"]["type"] == "log" and rtt["layout"]["yaxis"]["type"] == "log"
    dashed = [d for d in rtt["data"] if d.get("line", {}).get("dash") == "dash"]
    assert [d["name"] for d in dashed] == ["floor (sockperf) · host"]
    scaling, curve = charts["echo-scaling"].figure["data"]
    assert scaling["x"] == [1, 2, 4, 8, 16] and "error_y" in scaling
    # the fitted curve, 0.5 + 0.01·x², from 1 to 16 clients
    assert curve["line"]["dash"] == "dot" and curve["x"][0] == 1 and curve["x"][-1] == 16
    assert curve["y"][0] == pytest.approx(0.51) and curve["y"][-1] == pytest.approx(3.06)
    assert len(charts["burst-timeline"].figure["data"][0]["x"]) <= 500


def test_terminal_and_html_render(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, _, report = built
    out = _terminal(report)
    for col in SEED_COLUMNS:
        assert col in out
    narrow = Console(record=True, width=80, color_system=None)
    render_report(report, narrow, verbose=True)
    lines = narrow.export_text().splitlines()
    # the seed's header on one line of a standard terminal, not wrapped
    assert any(all(col in line for col in SEED_COLUMNS) for line in lines)
    assert "3.0× the network's 0.39 ms" in out
    page = render_page(report)
    for col in SEED_COLUMNS:
        assert col in page
    assert 'id="chart-rtt-size"' in page and 'id="table-pingpong-0-tcp-host"' in page


def test_write_reports(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    run, _, report = built
    paths = write_reports(run.path, report)
    assert paths["html"].is_file()
    with paths["pingpong-0-tcp-host"].open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["size_kib"] == "1.0" and float(rows[0]["avg_ms"]) == pytest.approx(1.172)
    doc = json.loads(paths["report_json"].read_text(encoding="utf-8"))
    assert doc["family"] == "net"


def test_family_seam_verdict_and_exit(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    run, metrics, _ = built
    assert FAMILY.exit_code(metrics) == 0
    assert FAMILY.verdict(metrics) == "pass (3 above the floor) (flagged figures)"
    figs = FAMILY.figures(run, metrics)
    assert "pingpong.tcp.host.1024.rtt_ms" in {f.key for f in figs}


def test_hostile_strings_are_escaped(tmp_path: Path) -> None:
    recs = [sockperf("host", 1024, 0.1)]
    recs += [ping(HOSTILE, "host", 1024, t, [1.0, 1.1]) for t in range(2)]
    recs.append(
        {
            "pattern": "note",
            "env": "host",
            "ok": True,
            "error": None,
            "text": f"note {HOSTILE} & more",
        }
    )
    recs.append(
        {
            "pattern": "pingpong",
            "env": "host",
            "ok": False,
            "error": f"peer said {HOSTILE}",
            "transport": HOSTILE,
            "size_bytes": 1024,
            "test": 2,
        }
    )
    run = make_run(tmp_path, recs, name=f"exp {HOSTILE}")
    metrics, report = _report(run)
    assert metrics["overheads"][0]["transport"] == HOSTILE
    page = render_page(report)
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for chart in report.charts():
        assert HOSTILE not in json.dumps(chart.figure)
    # table ids (anchors, CSV file names) carry no markup or path characters
    assert all(
        set(t.id) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        for t in report.tables()
    )
    paths = write_reports(run.path, report)
    assert all(p.parent in (run.path, run.path / "tables") for p in paths.values())
    assert HOSTILE in _terminal(report)  # plain text on a terminal, where it is inert


def test_failed_run_and_empty_metrics(tmp_path: Path) -> None:
    run = make_run(tmp_path, [], status="failed", error="sockperf not installed")
    metrics, report = _report(run)
    texts = [f.text for f in report.headline.findings]
    assert texts[0] == "run failed: sockperf not installed"
    assert "no messaging figure was recorded" in texts
    assert report.headline.verdict == "fail"
    assert FAMILY.exit_code(metrics) == 3
    assert not report.charts()
    render_page(report)
    _terminal(report)


def test_report_rejects_a_wrong_typed_metrics_file(
    built: tuple[RunDir, dict[str, Any], Report],
) -> None:
    from gridbench.errors import ResultsError

    run, metrics, _ = built
    bad = json.loads(json.dumps(metrics))
    bad["echo"][0]["rows"][0]["mean_ms"] = True
    with pytest.raises(ResultsError) as exc:
        FAMILY.report(run, bad)
    assert exc.value.where == f"{run.metrics_file}: echo.0.rows.0.mean_ms"


def test_sections_are_typed(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, _, report = built
    assert all(isinstance(s, Table | Chart | Statements) for s in report.sections)
    report.exported()  # no two exported tables share an id


def test_a_sparse_valid_metrics_document_renders(tmp_path: Path) -> None:
    """Only the keys the schema requires: every optional part absent or null."""
    metrics: dict[str, Any] = {
        "schema": "gridbench.net/1",
        "pingpong": [{"transport": "t", "env": "e", "rows": [{"size_bytes": 1, "rtt_ms": {}}]}],
        "echo": [{"transport": "g", "env": "e", "config": "c", "rows": [{"calls": 1}]}],
        "echo_scaling": [
            {"transport": "g", "env": "e", "config": "c", "points": [{"clients": 1}], "fit": {}}
        ],
        "burst": [{"transport": "t", "env": "e", "timeline": {"t_ms": [1.0], "completed": [1]}}],
        "transfer": [{"tool": "x", "env": "e", "direction": "up", "streams": 1}],
        "floor": [
            {
                "env": "e",
                "sockperf": [{"size_bytes": 1, "rtt_ms": {}}],
                "iperf3": [{"streams": 1, "direction": "up"}],
                "failed": [{}],
            }
        ],
        "overheads": [{}],
        "validity": {"flags": [{}], "withheld": [{}]},
        "thresholds": [{}],
    }
    run = make_run(tmp_path, [])
    report = FAMILY.report(run, metrics)
    render_page(report)
    _terminal(report)
    write_reports(run.path, report)
    assert FAMILY.figures(run, metrics) == []
