"""What-if model against live Slurm (tests/slurm_cluster.py: one node of 8 CPUs): fit the
generic chain on the low rates of a ramp of 1.5 s jobs, predict the higher rates, and
compare the predicted capacity with the measured one in the same test.

The measured capacity is not 8 CPUs / 1.5 s = 5.3/s: this Slurm starts jobs at scheduler
passes about a second apart and at some job ends, so a CPU freed between them idles
(about 4-4.5/s measured). The fit reads the passes from the start stamps; without them
the prediction would be CPUs / job length, not what Slurm delivers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.model.predict import Marking, Repeat, predict
from gridbench.model.spec import load_model
from gridbench.model.sweep import Window, parse_sweeps, points, with_value
from slurm_cluster import CPUS, SlurmCluster, slurm_fixture  # noqa: F401 (the fixture slurm)
from test_model import gridbench, latest_predicted

pytestmark = pytest.mark.e2e
JOB_S = 1.5
RAMP = "[2/s,6/s,8/s]"


def spec(cluster: SlurmCluster) -> str:
    return f"""
name: slurm-ramp
backend: {{type: slurm, options: {{conf: {cluster.conf}}}}}
job: {{command: [sleep, "{JOB_S:g}"], runtime: {JOB_S:g}s}}
load: {{model: open, rate: 1/s}}
sweep: {{rate: {RAMP}}}
trial: {{duration: 8s}}
trials: 1
timeouts: {{status_interval: 0.2s, drain: 40s}}
"""


@pytest.fixture(scope="module")
def ramp(slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("model-slurm")
    (root / "spec.yaml").write_text(spec(slurm))
    p = gridbench(["run", str(root / "spec.yaml")], root / "results")
    assert p.returncode in (0, 1), p.stdout[-2000:] + p.stderr[-2000:]
    (run,) = list((root / "results").iterdir())
    return run


def metrics(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return data


def test_fit_below_the_knee_predicts_slurm_capacity(ramp: Path, tmp_path: Path) -> None:
    results = ramp.parent
    meas = metrics(ramp)
    knee = meas["knee"]["highest_sustained_rate_per_s"]
    assert knee is not None and knee < 6, meas["knee"]  # the ramp does break
    model = tmp_path / "slurm.yaml"
    p = gridbench(["model", "fit", str(ramp), "--out", str(model)], results)
    assert p.returncode == 0, p.stdout + p.stderr
    m = load_model(model)
    assert m.fitted_from is not None and max(m.fitted_from.rates_per_s) == knee
    # the chain is the run's own: Slurm's stages, the job running from start to end
    assert m.chain is not None and m.tiers is None
    (job,) = [st for st in m.chain if st.job]
    assert (job.kind, job.start_stage, job.stage) == ("tier", "slurm_start", "slurm_end")
    assert job.concurrency == CPUS and job.concurrency_source == "inferred"
    assert job.service is not None and JOB_S <= job.service.mean < JOB_S + 0.2
    assert job.dispatch is not None and 0.5 < job.dispatch.interval_s < 1.5

    p = gridbench(["model", "check", str(model), str(ramp)], results)
    pred = metrics(latest_predicted(results))
    cap_m, cap_p = meas["knee"]["capacity_per_s"], pred["knee"]["capacity_per_s"]
    assert abs(cap_p - cap_m) / cap_m <= 0.15, (cap_m, cap_p, p.stdout)
    assert pred["bottleneck"]["stage"] == meas["bottleneck"]["stage"] == "slurm_start"
    assert [pt["offered_rate_per_s"] for pt in pred["points"]] == [2.0, 6.0, 8.0]

    print(f"capacity measured {cap_m:.2f}/s, predicted {cap_p:.2f}/s")

    # a declared CPU count wins over the inferred one; four times the CPUs: no bottleneck
    declared = with_value(m, "chain.slurm_end.concurrency", str(4 * CPUS), "--set")
    (job,) = [st for st in declared.chain or [] if st.job]
    assert (job.concurrency, job.concurrency_source) == (4 * CPUS, "declared")
    pts = points(declared, parse_sweeps(["rate=6/s"]), Window(duration_s=8.0, drain_s=30.0))
    run, _ = predict(pts, tmp_path / "what-if", {"name": "x4"}, Marking("m", declared),
                     Repeat(reps=2))  # fmt: skip
    assert analyze_run(run)["bottleneck"]["stage"] is None
