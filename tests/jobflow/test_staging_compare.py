"""The transfer rate beyond the staging table (issue 23): the job-flow report's chart of
each transfer's rate against the swept size beside its time, and ``gridbench compare`` /
the dashboard's /compare on the rate's change. Two real reference-grid runs (the grid
started by the backend) sweep ``job.output_size`` over the same points; the second's
stage-out link is four times slower."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest
from fastapi.testclient import TestClient

from conftest import BIN, cli_env
from gridbench.compare import load_comparison
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.report import build_report
from gridbench.jobflow.report.staging import staging_rows
from gridbench.web.app import WebConfig, create_app
from test_reference_staging import MIB, spec
from test_runner import run_spec

PER_FILE, FILES, SIZES = 0.02, 2, (256 * 1024, MIB)
BODY = f"""
job: {{runtime: 0.05s, output_files: {FILES}}}
load: {{model: open, rate: 10/s}}
trials: 2
trial: {{jobs: 4}}
timeouts: {{status_interval: 0.1s, drain: 30s}}
sweep: {{job.output_size: [256k, 1M]}}
"""
FAST_BW, SLOW_BW = 4 * MIB, MIB


def model_rate(size: int, bw: int) -> float:
    """The modelled link: a stream is held for files·per_file_s + bytes/bandwidth."""
    return size / (FILES * PER_FILE + size / bw)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("staging-cmp") / "results"
    ids: dict[str, str] = {}
    for name, bw in (("fast", FAST_BW), ("slow", SLOW_BW)):
        stage_out = f"{{bandwidth_bps: {bw}, per_file_s: {PER_FILE}, streams: 4}}"
        out = run_spec(spec(f"stage-{name}", "{}", stage_out, BODY), root)
        assert out.status == "complete"
        analyze_run(out.run.path, write=True)
        ids[name] = out.run.path.name
    return {"root": root, **ids}


def metrics_of(runs: dict[str, Any], name: str) -> dict[str, Any]:
    m: dict[str, Any] = json.loads((runs["root"] / runs[name] / "metrics.json").read_text())
    return m


def test_the_report_charts_the_rate_against_the_swept_size(runs: dict[str, Any]) -> None:
    m = metrics_of(runs, "fast")
    report = build_report(m, {})
    (c,) = [s for s in report.sections if s.id == "staging-rate"]
    traces = {t["name"]: t for t in c.figure["data"]}
    assert set(traces) == {"stage_out rate", "stage_out time"}
    rate, time = traces["stage_out rate"], traces["stage_out time"]
    assert rate["x"] == ["job.output_size=256k", "job.output_size=1M"] == time["x"]
    for size, r, s in zip(SIZES, rate["y"], time["y"], strict=True):
        model = model_rate(size, FAST_BW) / MIB  # MiB/s; the grid's loop ends a sleep late
        assert 0.75 * model <= r <= 1.01 * model, (r, model)  # only (see test_reference_...)
        assert s == pytest.approx(size / MIB / r, rel=0.05)  # time = bytes / rate
    # the per-file cost is amortised by the larger transfer: its rate and time both rise
    assert rate["y"][1] > rate["y"][0] and time["y"][1] > time["y"][0]
    rows = [r for r in staging_rows(m) if r["point"] == "job.output_size=1M"]
    assert [r["seconds_p50"] for r in rows] == pytest.approx([time["y"][1]] * 2, rel=0.1)


def test_compare_reports_the_slower_links_rate(runs: dict[str, Any]) -> None:
    c = load_comparison(runs["root"], [runs["fast"], runs["slow"]])
    names = {m.metric for m in c.metric_info}
    assert {"staging.stage_out.rate_bps_p50", "staging.stage_out.seconds_p50"} <= names
    for point, size in zip(("job.output_size=256k", "job.output_size=1M"), SIZES, strict=True):
        p = next(p for p in c.points if p.key == point)
        rate = p.metric("staging.stage_out.rate_bps_p50")
        assert rate is not None
        (d,) = rate.diffs
        want = model_rate(size, SLOW_BW) / model_rate(size, FAST_BW)  # 0.28 and 0.35
        assert d.ratio is not None and 0.75 * want <= d.ratio <= 1.3 * want, (d.ratio, want)
        t = p.metric("staging.stage_out.seconds_p50")
        assert t is not None and t.diffs[0].ratio is not None and t.diffs[0].ratio > 2.0
        # two trials a side: Welch's p came out near 0.003 (256k) and 0.0003 (1M) here;
        # the larger effect must be significant, the smaller at least not the other way
        if size == MIB:
            assert d.verdict == "regressed" and d.significant, d
            assert t.diffs[0].verdict == "regressed"
        else:
            assert d.verdict != "improved" and t.diffs[0].verdict != "improved"
    # through the CLI and the dashboard, the same figures
    p = subprocess.run(
        [str(BIN), "compare", runs["fast"], runs["slow"], "--json", "--metric", "staging.*"],
        env=cli_env(runs["root"]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert {m["metric"] for m in d["metrics"]} == {
        "staging.stage_out.rate_bps_p50",
        "staging.stage_out.seconds_p50",
    }
    assert {m["better"] for m in d["metrics"] if m["metric"].endswith("rate_bps_p50")} == {"higher"}
    client = TestClient(create_app(WebConfig(runs["root"])), base_url="http://127.0.0.1")
    html = client.get("/compare", params={"ids": [runs["fast"], runs["slow"]]}).text
    found = re.findall(r'<li class="finding (\w+)">(.*?)</li>', html, re.S)
    rate_found = [t for _, t in found if "staging.stage_out.rate_bps_p50 at" in t]
    assert "regressed</strong> staging.stage_out.rate_bps_p50 at job.output_size=1M" in " ".join(
        rate_found
    ), found
