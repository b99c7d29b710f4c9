"""Staging in the what-if model, against a real reference-grid ramp with a slow output
download (``gridbench demo --policy staging``: one stream at 640 KiB/s, 256 KiB per job,
2.5 jobs/s): fit on the rates below the knee, the link's bandwidth and streams come out
as configured, the predicted capacity and breaking stage match the measured ones, and a
swept output size moves the bottleneck to stage-out at a rate the grid sustained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.model.predict import Marking, Repeat, predict
from gridbench.model.spec import load_model
from gridbench.model.sweep import Window, parse_sweeps, points
from test_model import gridbench, latest_predicted, measure

pytestmark = pytest.mark.e2e
BANDWIDTH = 655_360  # the staging preset's bridge.stage_out (gridbench.jobflow.reference.presets)


def metrics(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return data


def test_staging_is_fitted_and_predicts_its_bottleneck(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run = measure("staging", "[2/s,4/s]", results, 8)
    meas = metrics(run)
    assert meas["bottleneck"]["stage"] == "stage_out_start", meas["bottleneck"]
    model = tmp_path / "staging.yaml"
    p = gridbench(["model", "fit", str(run), "--out", str(model)], results)
    assert p.returncode == 0, p.stdout + p.stderr
    m = load_model(model)
    assert m.tiers is not None and m.tiers.stage_out is not None and m.tiers.stage_in is None
    link = m.tiers.stage_out
    assert abs(link.bandwidth_bps - BANDWIDTH) / BANDWIDTH < 0.05, link
    assert (link.streams, link.streams_source, link.bytes) == (1, "inferred", 256 * 1024)
    assert abs(m.tiers.workers.runtime.mean - 1.0) < 0.05  # the run, without the download

    p = gridbench(["model", "check", str(model), str(run)], results)
    pred = metrics(latest_predicted(results))
    cap_m, cap_p = meas["knee"]["capacity_per_s"], pred["knee"]["capacity_per_s"]
    assert abs(cap_p - cap_m) / cap_m <= 0.10, (cap_m, cap_p, p.stdout)
    assert pred["bottleneck"]["stage"] == "stage_out_start"

    print(f"capacity measured {cap_m:.2f}/s, predicted {cap_p:.2f}/s; {link.bandwidth_bps:.0f} B/s")

    # 1 MiB per job at 1/s, a rate the grid sustained with 256 KiB: stage-out breaks
    assert meas["knee"]["highest_sustained_rate_per_s"] >= 1.0
    window = Window(duration_s=8.0, drain_s=30.0)
    pts = points(m, parse_sweeps(["rate=1/s", "job.output_size=256k,1M"]), window)
    run_p, _ = predict(pts, tmp_path / "what-if", {"name": "sizes"}, Marking("m", m),
                       Repeat(reps=2))  # fmt: skip
    sized = analyze_run(run_p)
    ratio = [
        min(t["throughput"]["stage_out_start"]["expected_ratio"] for t in pt["trials"])
        for pt in sized["points"]
    ]
    assert ratio[0] > 0.9 and ratio[1] < 0.8, ratio  # 1.6 s per job at 1 job/s
    assert sized["bottleneck"]["stage"] == "stage_out_start"
