"""Reports of the closed models: MAPPER tables (terminal, HTML, CSV), the probe's
'557±124 ms (α=0.05)' line, growth statements, and escaping of hostile names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from rich.console import Console

from gridbench.jobflow.analysis import analyze_run
from gridbench.jobflow.events.chain import Stage, StageChain
from gridbench.jobflow.report import build_report
from gridbench.jobflow.report import rows as T
from gridbench.jobflow.report.loading import load_series
from gridbench.report import render_report
from gridbench.report import write_reports as _write_reports
from gridbench.report.html import render_page
from test_analysis_closed import batch_rows, closed_run, ev, local_chain, probe_rows, sustain_rows
from test_analysis_fixtures import frame, info, simple_chain, write_trial

HOSTILE_STAGE = "[red]<img src=x onerror=alert(1)>[/red]_submit"


def _render(metrics: dict[str, Any]) -> str:
    console = Console(record=True, width=200, color_system=None)
    render_report(build_report(metrics, {}), console, verbose=True)
    return console.export_text()


def write_reports(run: Path, metrics: dict[str, Any], series: dict[str, Any]) -> dict[str, Path]:
    return _write_reports(run, build_report(metrics, series))


def render_html(metrics: dict[str, Any], series: dict[str, Any]) -> str:
    return render_page(build_report(metrics, series))


def sustain_run(tmp_path: Path) -> Path:
    """One point (users=2) with two trials; the second has every time doubled."""
    run = tmp_path / "sustain"
    for k, scale in enumerate((1.0, 2.0)):
        rows = [{**r, "t": r["t"] * scale} for r in sustain_rows()]
        tinfo = info(
            simple_chain("submit", "client_done"),
            rate=None,
            load_model="sustain",
            trial_id=f"p00-t0{k}",
            trial_index=k,
        )
        write_trial(run, tinfo, frame(rows), extra={"point": {"users": 2}})
    return run


@pytest.fixture
def sustain(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    run = sustain_run(tmp_path)
    return run, analyze_run(run, write=True)


def test_sustain_table_rows(sustain: tuple[Path, dict[str, Any]]) -> None:
    _, m = sustain
    rows = T.sustain_rows(m)
    assert [(r["level"], r["trial_id"]) for r in rows] == [
        ("trial", "p00-t00"),
        ("trial", "p00-t01"),
        ("point", None),
    ]
    t0, t1, pt = rows
    assert t0["submit_avg_s"] == pytest.approx(0.175)
    assert (t0["submit_min_s"], t0["submit_max_s"]) == (pytest.approx(0.1), pytest.approx(0.3))
    assert t0["query_avg_s"] == pytest.approx(0.26 / 3)
    assert t1["submit_avg_s"] == pytest.approx(0.35) and t1["query_max_s"] == pytest.approx(0.4)
    assert (t0["done"], t0["canceled"], t0["failed"], t0["exceptions"]) == (2, 1, 1, 2)
    # the point row pools the 8 submissions and sums the counts of both trials
    assert pt["n_submit"] == 8 and pt["submit_avg_s"] == pytest.approx((0.7 + 1.4) / 8)
    assert (pt["submit_min_s"], pt["submit_max_s"]) == (pytest.approx(0.1), pytest.approx(0.6))
    assert (pt["done"], pt["canceled"], pt["failed"], pt["exceptions"]) == (4, 2, 2, 4)
    users = T.sustain_user_rows(m)
    assert [(r["trial_id"], r["user"], r["submitted"]) for r in users] == [
        ("p00-t00", "user0", 2),
        ("p00-t00", "user1", 3),
        ("p00-t01", "user0", 2),
        ("p00-t01", "user1", 3),
    ]


def test_sustain_csv_terminal_and_html(sustain: tuple[Path, dict[str, Any]]) -> None:
    run, m = sustain
    paths = write_reports(run, m, load_series(run))
    assert {"sustain", "sustain_users"} <= set(paths)
    # empty: not written
    assert not {"batch", "probe", "probe_bursts", "retry", "growth"} & set(paths)
    csv = pl.read_csv(paths["sustain"])
    assert csv["level"].to_list() == ["trial", "trial", "point"]
    assert csv["submit_avg_s"].to_list() == pytest.approx([0.175, 0.35, 2.1 / 8])
    assert csv["exceptions"].to_list() == [2, 2, 4]
    text = _render(m)
    head = text.split("Sustain: submit and query times")[0]
    assert "users=2: submit time avg" in head
    assert "4 done, 2 canceled, 2 failed, 4 exceptions over 2 trials" in head
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("p00-t01"))
    assert row.split()[-4:] == ["2", "1", "1", "2"]
    assert row.split()[2:5] == ["0.35", "0.20", "0.60"]
    page = paths["html"].read_text()
    assert '<h3 id="table-sustain">' in page
    assert "4 done, 2 canceled, 2 failed, 4 exceptions over 2 trials" in page
    assert page.index('id="results"') < page.index('id="evaluation"')


def test_batch_table_and_csv(tmp_path: Path) -> None:
    run = closed_run(tmp_path, "batch", batch_rows(), local_chain())
    m = analyze_run(run, write=True)
    (row,) = T.batch_rows(m)
    assert row["level"] == "trial" and row["end_stage"] == "local_end"
    assert (row["submitted"], row["ended"], row["completed"], row["failed"]) == (5, 4, 3, 2)
    assert row["makespan_s"] == pytest.approx(2.4)
    assert row["throughput_per_s"] == pytest.approx(4 / 2.4)
    assert row["submit_rate_per_s"] == pytest.approx(8.0)
    paths = write_reports(run, m, load_series(run))
    csv = pl.read_csv(paths["batch"])
    assert csv["throughput_per_s"].to_list() == pytest.approx([4 / 2.4])
    text = _render(m)
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("p00-t00"))
    # the page's columns: submitted, ended, failed, end stage, makespan, throughput, rate
    assert line.split()[1:8] == ["5", "4", "2", "local_end", "2.40", "1.67", "8"]
    assert "throughput 1.67/s (100/min)" in text.split("Batch:")[0]


def probe_chain() -> StageChain:
    return StageChain(
        (
            Stage("submit", "client"),
            Stage("ce_entry", "ce"),
            Stage(HOSTILE_STAGE, "ce"),
            Stage("client_done", "client"),
        )
    )


def test_probe_line_in_seed_form_and_hostile_stage_escaped(tmp_path: Path) -> None:
    rows = [{**r, "stage": HOSTILE_STAGE} if r["stage"] == "ce_submit" else r for r in probe_rows()]
    run = closed_run(tmp_path, "probe", rows, probe_chain())
    m = analyze_run(run, write=True)
    (row,) = T.probe_rows(m)
    assert row["result"] == "550±205 ms (α=0.05)"
    assert row["below"] == "367±379 ms of the 550" and row["below_stage"] == HOSTILE_STAGE
    assert (row["n"], row["errors"]) == (4, 1)
    bursts = T.probe_burst_rows(m)
    assert [(r["threads"], r["requests"], r["total_s"], r["errors"]) for r in bursts] == [
        (2, 3, pytest.approx(1.5), 0),
        (1, 2, pytest.approx(0.8), 1),
    ]
    assert [r["per_request_s"] for r in bursts] == [pytest.approx(0.5), pytest.approx(0.4)]
    paths = write_reports(run, m, load_series(run))
    csv = pl.read_csv(paths["probe"])
    assert csv["result"].to_list() == ["550±205 ms (α=0.05)"]
    assert pl.read_csv(paths["probe_bursts"])["threads"].to_list() == [2, 1]
    text = _render(m)
    assert "550±205 ms (α=0.05)" in text.split("Probe:")[0]  # in the headline
    assert f"367±379 ms of the 550 below {HOSTILE_STAGE}" in text  # rich markup shown as is
    page = render_html(m, {})
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "550±205 ms (α=0.05)" in page


def test_growth_statement_in_headline_html_and_csv(tmp_path: Path) -> None:
    run = tmp_path / "growth"
    xs = (1, 2, 4, 8, 16)
    for k, x in enumerate(xs):
        y = 0.0062 * x * x
        rows: list[dict[str, Any]] = []
        for i, d in enumerate((y * 0.98, y, y * 1.02)):
            rows += [
                ev(f"j{i}", "submit", 100.0 * i, probe="single"),
                ev(f"j{i}", "submit_ack", 100.0 * i + d),
                ev(f"j{i}", "client_done", 100.0 * i + d + 1),
            ]
        tinfo = info(
            simple_chain("submit", "client_done"),
            rate=None,
            load_model="probe",
            trial_id=f"p{k:02d}-t00",
            point_index=k,
        )
        write_trial(run, tinfo, frame(rows), extra={"point": {"processes": x}})
    m = analyze_run(run, write=True)
    sentence = "submission time grows quadratically: 0.0062·x² s (x = processes)"
    (g,) = T.growth_rows(m)
    assert g["model"] == "quadratic" and g["form"] == "b·x²"
    assert g["b"] == pytest.approx(0.0062, rel=1e-6) and g["statement"] == sentence
    paths = write_reports(run, m, load_series(run))
    assert pl.read_csv(paths["growth"])["statement"].to_list() == [sentence]
    head = _render(m).split("Probe:")[0]
    assert f"growth: {sentence}" in head
    page = paths["html"].read_text()
    # the growth sentence is a headline finding (stated once: not again under Results)
    top = page.split('id="headline"')[1].split("</section>")[0]
    assert f"growth: {sentence}" in top
    results = page.split('id="results"')[1].split("</section>")[0]
    assert sentence not in results
    assert '<h3 id="table-growth">' in page
    probe = T.probe_rows(m)
    assert [r["n"] for r in probe] == [3] * len(xs)


def test_open_metrics_get_no_closed_tables(tmp_path: Path) -> None:
    run = tmp_path / "open"
    chain = simple_chain("submit", "client_done")
    rows = [
        ev(f"j{i}", s, i + d) for i in range(5) for s, d in (("submit", 0.0), ("client_done", 1.0))
    ]
    write_trial(run, info(chain, rate=1.0), frame(rows))
    m = analyze_run(run)
    tabs = T.all_tables(m)
    for name in ("sustain", "sustain_users", "batch", "probe", "probe_bursts", "retry", "growth"):
        assert tabs[name] == []
    assert "Result" not in _render(m)
    assert 'id="results"' not in render_html(m, {})
