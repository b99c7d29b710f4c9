"""CSV and JSON exports parse back to the same numbers; write_reports writes everything."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import report_fixtures as fx
from gridbench.errors import ResultsError
from gridbench.jobflow.report import build_report
from gridbench.jobflow.report import rows as T
from gridbench.jobflow.report.loading import load_metrics, load_series
from gridbench.report import write_reports
from gridbench.report.csv_export import export_tables, report_document, write_csv_tables
from gridbench.sections import Table


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_latency_csv_round_trips(tmp_path: Path) -> None:
    metrics, _ = fx.write_fixture(tmp_path)
    paths = export_tables(tmp_path, build_report(metrics, {}))
    rows = _read(paths["latency"])
    assert paths["latency"] == tmp_path / "tables" / "latency.csv"
    assert len(rows) == 30
    expected = T.latency_rows(metrics)
    for got, want in zip(rows, expected, strict=True):
        assert got["component"] == want["component"]
        for key in ("avg_s", "min_s", "max_s", "std_s", "ci95_s", "rate_per_s"):
            assert float(got[key]) == want[key]  # shortest round-trip repr: exact
    ce60 = next(r for r in rows if r["rate_per_min"] == "60.0" and r["component"] == "ce_finish")
    assert float(ce60["avg_s"]) == pytest.approx(1796.15)


def test_csv_tables_read_back_with_polars(tmp_path: Path) -> None:
    metrics, _ = fx.write_fixture(tmp_path)
    paths = export_tables(tmp_path, build_report(metrics, {}))
    tp = pl.read_csv(paths["throughput"])
    row = tp.filter((pl.col("rate_per_min") == 100.0) & (pl.col("stage") == "ce_done"))
    rep = metrics["points"][4]["summary"]["throughput"]["ce_done"]
    assert row["mean_per_s"].item() == rep["mean"]
    assert row["std_per_s"].item() == rep["std"]
    assert row["bottleneck"].item() is True
    wide = pl.read_csv(paths["latency_wide"])
    avg = wide.filter((pl.col("statistic") == "avg") & (pl.col("rate_per_min") == 40.0))
    assert avg["ce_finish"].item() == pytest.approx(262.90)
    fail = pl.read_csv(paths["failures"])
    assert fail.filter(pl.col("kind") == "submit_timeout")["total"].to_list() == [
        0,
        1 + 2 + 3,
        4 + 5 + 6,
        15 + 16 + 17,
        30 + 31 + 32,
    ]
    val = _read(paths["validity"])
    bad = [r for r in val if r["valid"] == "false"]
    assert [r["trial_id"] for r in bad] == [fx.INVALID_TRIAL]
    th = _read(paths["thresholds"])
    assert [r["passed"] for r in th] == ["false", "true", "false"]
    assert th[2]["actual"] == ""


def test_report_json_holds_metrics_and_tables(tmp_path: Path) -> None:
    metrics, _ = fx.write_fixture(tmp_path)
    paths = export_tables(tmp_path, build_report(metrics, {}))
    doc = json.loads(paths["report_json"].read_text())
    assert doc["schema"] == "gridbench.report/1"
    assert doc["metrics"] == metrics
    assert doc["tables"]["latency"] == T.latency_rows(metrics)
    assert doc["tables"]["thresholds"][1]["passed"] is True


def test_report_json_replaces_nan_with_null() -> None:
    m = fx.make_metrics()
    m["points"][0]["summary"]["latency"]["dg"]["std"] = float("nan")
    doc = report_document(build_report(m, {}))
    text = json.dumps(doc, allow_nan=False)  # raises if any NaN survived
    assert json.loads(text)["metrics"]["points"][0]["summary"]["latency"]["dg"]["std"] is None


def test_spreadsheet_formulas_are_defused(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"kind": '=HYPERLINK("http://x")', "value": -1.5},
        {"kind": "ok", "value": 2.0},
    ]
    tables = [Table.from_records("t", "t", rows), Table.from_records("empty", "empty", [])]
    paths = write_csv_tables(tmp_path, tables)
    assert set(paths) == {"t"}
    got = _read(paths["t"])
    assert got[0]["kind"] == '\'=HYPERLINK("http://x")'
    assert float(got[0]["value"]) == -1.5
    assert got[1]["kind"] == "ok"


def test_write_reports_writes_all_files(tmp_path: Path) -> None:
    fx.write_fixture(tmp_path)
    metrics = load_metrics(tmp_path)
    series = load_series(tmp_path)
    assert len(series) == 15
    paths = write_reports(tmp_path, fx.build(metrics, series))
    assert paths["html"] == tmp_path / "report.html"
    assert paths["report_json"] == tmp_path / "report.json"
    for name in ("latency", "throughput", "failures", "thresholds", "validity"):
        assert paths[name].is_file()
    assert paths["html"].stat().st_size > 4_000_000  # plotly.js is inlined
    assert not list(tmp_path.glob(".*.tmp"))


def test_load_metrics_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ResultsError) as missing:
        load_metrics(tmp_path)
    assert missing.value.where == str(tmp_path / "metrics.json")
    (tmp_path / "metrics.json").write_text('{"schema": "gridbench.metrics/1",\n "points": [')
    with pytest.raises(ResultsError) as broken:
        load_metrics(tmp_path)
    assert broken.value.where is not None and broken.value.where.endswith("metrics.json:2")
    (tmp_path / "metrics.json").write_text('{"schema": "x", "points": []}')
    with pytest.raises(ResultsError, match="unsupported metrics schema"):
        load_metrics(tmp_path)


def test_write_reports_rejects_bad_metrics(tmp_path: Path) -> None:
    with pytest.raises(ResultsError):
        write_reports(tmp_path, build_report({"schema": "nope"}, {}))
    assert not (tmp_path / "report.html").exists()


def test_minimal_metrics_still_report(tmp_path: Path) -> None:
    """An analysis that produced almost nothing still yields a readable report."""
    metrics: dict[str, Any] = {
        "schema": "gridbench.metrics/1",
        "experiment": "bare",
        "points": [
            {"index": 0, "point": {"rate": 6.0}, "offered_rate_per_s": 0.1,
             "trials": [{"trial_id": "p00-t00"}]},
            {"index": 1, "point": {"rate": 12.0}, "trials": []},
        ],
    }  # fmt: skip
    paths = write_reports(tmp_path, build_report(metrics, {}))
    page = paths["html"].read_text()
    assert "no bottleneck: every stage kept up with the offered rate" in page
    assert "no knee could be determined" in page
    assert "0.1/s (6/min)" in page
    assert "rate=12" in page  # a point without an offered rate is named by its parameters
    assert set(paths) == {"points", "latency", "latency_wide", "latency_jobs", "validity",
                          "report_json", "html"}  # fmt: skip
    doc = json.loads(paths["report_json"].read_text())
    assert doc["tables"]["validity"][0]["trial_id"] == "p00-t00"
