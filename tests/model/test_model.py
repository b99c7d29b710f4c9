"""What-if models (gridbench.model): fit on the low rates of a measured reference-grid
ramp, predict the higher ones and compare with what was measured, in the same test; a
model edited to batched polling predicts no bottleneck, and a batched run of the grid
confirms it; bad models get one clear error.

One session fixture measures the ramp (sequential polling, 1-6 jobs/s) and a batched
run at the overloaded rates; every test shares them (about two minutes in all).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import BIN, cli_env
from gridbench.model.fit import service_times, status_policy
from gridbench.model.fitdist import fit_duration

pytestmark = pytest.mark.e2e
RAMP = "[1/s,2/s,4/s,6/s]"
BATCHED = "[6/s]"


def gridbench(
    args: list[str], results: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(BIN), *args],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


def measure(policy: str, rates: str, results: Path, seconds: int) -> Path:
    before = set(results.iterdir()) if results.exists() else set()
    sets = [
        "--set",
        "trials=1",
        "--set",
        f"sweep.rate={rates}",
        "--set",
        f"trial.duration={seconds}s",
    ]
    p = gridbench(["demo", "--policy", policy, *sets], results)
    assert p.returncode in (0, 1), p.stdout[-2000:] + p.stderr[-2000:]
    (run,) = set(results.iterdir()) - before
    return run


@pytest.fixture(scope="session")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    results = tmp_path_factory.mktemp("model") / "results"
    return {
        "results": results,
        # 15 s: 15 jobs at 1/s, so a mean latency is not one poll cycle's luck
        "sequential": measure("sequential", RAMP, results, 15),
        "batched": measure("batched", BATCHED, results, 10),
    }


def metrics(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return data


def latest_predicted(results: Path) -> Path:
    runs = [r for r in results.iterdir() if "predicted" in (r / "experiment.json").read_text()]
    return max(runs, key=lambda r: r.stat().st_mtime)


def test_fit_below_the_knee_predicts_capacity_bottleneck_and_latency(
    measured: dict[str, Path], tmp_path: Path
) -> None:
    results, run = measured["results"], measured["sequential"]
    model = tmp_path / "m.yaml"
    p = gridbench(["model", "fit", str(run), "--rates", "1/s,2/s", "--out", str(model)], results)
    assert p.returncode == 0, p.stderr
    from gridbench.model.spec import load_model

    m = load_model(model)
    assert m.fitted_from is not None and m.fitted_from.rates_per_s == [1.0, 2.0]
    su = m.status_update
    assert su.policy == "sequential"  # read from the T7 stamps, nothing declared
    assert abs(su.per_job_cost_s - 0.35) < 0.035  # the grid's configured cost
    assert abs(m.tiers.workers.runtime.mean - 1.0) < 0.05  # the demo's 1 s jobs
    assert m.tiers.ce.service.fit is not None and m.tiers.ce.service.fit.n >= 25

    p = gridbench(["model", "check", str(model), str(run), "--json"], results)
    assert p.returncode == 0, p.stdout  # within bounds
    rows = json.loads(p.stdout.strip().splitlines()[-1])
    meas, pred = metrics(run), metrics(latest_predicted(results))
    # the same figures, read from both runs' metrics here, not from the command's verdict
    cap_m, cap_p = meas["knee"]["capacity_per_s"], pred["knee"]["capacity_per_s"]
    assert abs(cap_p - cap_m) / cap_m <= 0.10, (cap_m, cap_p)
    assert meas["bottleneck"]["stage"] == pred["bottleneck"]["stage"] == "ce_done"
    knee = meas["knee"]["highest_sustained_rate_per_s"]
    for mp, pp in zip(meas["points"], pred["points"], strict=True):
        assert mp["offered_rate_per_s"] == pp["offered_rate_per_s"]
        if mp["offered_rate_per_s"] <= knee:
            lm = np.mean([t["latency"]["overall"]["mean"] for t in mp["trials"]])
            lp = np.mean([t["latency"]["overall"]["mean"] for t in pp["trials"]])
            assert abs(lp - lm) / lm <= 0.15, (mp["offered_rate_per_s"], lm, lp)
    assert {r["figure"] for r in rows} >= {"capacity", "breaking stage", "latency below the knee"}
    # the prediction has the measured run's points, so compare overlays it point by point
    p = gridbench(["compare", str(run), str(latest_predicted(results))], results)
    assert "point rate=1/s" in p.stdout and "point rate=6/s" in p.stdout, p.stdout + p.stderr
    # a prediction against a measurement: the model's error, never better or worse
    assert "the differences are the model's error" in p.stdout, p.stdout
    assert not any(w in p.stdout for w in (" better", " worse", "regressed", "improved"))
    js = gridbench(["compare", str(run), str(latest_predicted(results)), "--json"], results)
    verdicts = {
        d["verdict"]
        for pt in json.loads(js.stdout)["points"]
        for m in pt["metrics"].values()
        for d in m["diffs"]
    }
    assert verdicts and verdicts <= {"model over", "model under", "within model error"}, verdicts
    # the model keeps where it was checked, and a prediction's report says it
    checked = load_model(model).checks
    assert [c.run for c in checked] == [run.name] and checked[0].within


def test_batched_polling_what_if_is_confirmed_by_the_grid(
    measured: dict[str, Path], tmp_path: Path
) -> None:
    results = measured["results"]
    model = tmp_path / "m.yaml"
    assert gridbench(["model", "fit", str(measured["sequential"]), "--rates", "1/s,2/s",
                      "--out", str(model)], results).returncode == 0  # fmt: skip
    p = gridbench(["model", "predict", str(model), "--set", "status_update.policy=batched",
                   "--sweep", f"rate={BATCHED[1:-1]}", "--reps", "2"], results)  # fmt: skip
    assert p.returncode in (0, 1), p.stderr
    predicted = metrics(latest_predicted(results))
    report = json.dumps(json.loads((latest_predicted(results) / "report.json").read_text()))
    assert "Predicted, not measured" in report and "never checked" in report
    assert metrics(measured["sequential"])["bottleneck"]["stage"] == "ce_done"
    assert predicted["bottleneck"]["stage"] is None, predicted["bottleneck"]
    confirmed = metrics(measured["batched"])
    assert confirmed["bottleneck"]["stage"] is None, confirmed["bottleneck"]
    for p_pt, m_pt in zip(predicted["points"], confirmed["points"], strict=True):
        ratios = [t["throughput"]["ce_done"]["expected_ratio"] for t in p_pt["trials"]]
        assert min(ratios) > 0.9
        assert m_pt["trials"][0]["throughput"]["ce_done"]["expected_ratio"] > 0.9
    # fitted on the batched run itself, the policy is read as batched
    out = tmp_path / "b.yaml"
    assert (
        gridbench(["model", "fit", str(measured["batched"]), "--out", str(out)], results).returncode
        == 0
    )
    from gridbench.model.spec import load_model

    assert load_model(out).status_update.policy == "batched"


GOOD = """
schema: gridbench.model/1
client: {to_ce: {mean: 0.005}, ack: {mean: 0.004}, observe: {mean: 0.05}}
tiers:
  ce: {concurrency: 4, service: {dist: lognormal, mean: 0.05, cv: 0.5}}
  transfer: {delay: {mean: 0.02}}
  bridge: {service: {mean: 0.05}}
  workers: {slots: 64, runtime: {mean: 1.0}}
status_update: {policy: sequential, per_job_cost_s: 0.35, interval_s: 0.5}
"""


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("runtime: {mean: 1.0}", "runtime: {mean: -1.0}", ":8: field 'tiers.workers.runtime.mean'"),
        (
            "  bridge: {service: {mean: 0.05}}\n",
            "  bridge: {concurrency: 2}\n",
            "field 'tiers.bridge.service': Field required",
        ),
        ("policy: sequential", "policy: polled", ":9: field 'status_update.policy'"),
    ],
    ids=["negative-time", "tier-without-service", "unknown-policy"],
)
def test_a_bad_model_is_one_clear_error(tmp_path: Path, old: str, new: str, said: str) -> None:
    from gridbench.errors import SpecError
    from gridbench.model.spec import load_model

    bad = tmp_path / "bad.yaml"
    assert old in GOOD
    bad.write_text(GOOD.replace(old, new))
    with pytest.raises(SpecError) as err:
        load_model(bad)
    text = str(err.value)
    assert said in text and "(fix:" in text and len(text.splitlines()) == 1, text


def test_the_hand_written_model_runs(tmp_path: Path) -> None:
    from gridbench.jobflow.analysis.experiment import analyze_run
    from gridbench.model.predict import Marking, Repeat, predict
    from gridbench.model.spec import load_model
    from gridbench.model.sweep import Window, parse_sweeps, points

    good = tmp_path / "good.yaml"
    good.write_text(GOOD)  # the bad models above are this one with one edit
    model = load_model(good, ["tiers.workers.slots=2"])  # 2 slots of 1 s jobs: 2 jobs/s
    pts = points(model, parse_sweeps(["rate=1/s,4/s"]), Window(duration_s=8.0, drain_s=30.0))
    run, info = predict(pts, tmp_path / "r", {"name": "hand"}, Marking("good.yaml", model),
                        Repeat(reps=2))  # fmt: skip
    assert info["events"] > 0 and info["checks"] == []
    m = analyze_run(run)
    assert m["bottleneck"]["stage"] == "bridge_done", m["bottleneck"]  # the edited pool limits
    assert m["knee"]["highest_sustained_rate_per_s"] == 1.0
    # the command line says a bad model in one line, exit code 2, no traceback
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("policy: sequential", "policy: polled"))
    p = gridbench(["model", "predict", str(bad)], tmp_path / "r")
    assert p.returncode == 2 and "status_update.policy" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_status_policy_and_service_times_from_synthetic_stamps() -> None:
    rng = np.random.default_rng(3)
    # sequential: a pass visits each tracked job for 0.3 s, then pauses 0.5 s
    t, stamps = 0.0, []
    for _ in range(40):
        n = int(rng.integers(1, 4))
        stamps += [t + 0.3 * (k + 1) for k in range(n)]
        t += 0.3 * n + 0.5
    seq = status_policy(np.array(stamps), np.zeros(len(stamps), dtype=np.int64))
    assert seq.policy == "sequential"
    assert seq.per_job_cost_s == pytest.approx(0.3, abs=0.01)
    assert seq.interval_s == pytest.approx(0.5, abs=0.02)
    bursts = np.repeat(np.arange(40) * 0.8, 3)  # three jobs seen at each batched call
    assert status_policy(bursts, np.zeros(bursts.size, dtype=np.int64)).policy == "batched"
    # a declared single server: the second of two jobs that arrive together waited
    s = service_times(np.array([0.0, 0.0]), np.array([1.0, 2.0]), np.zeros(2, dtype=np.int64), 1)
    assert s.tolist() == [1.0, 1.0]
    d = fit_duration(rng.lognormal(0.0, 0.5, 2000))
    assert d.dist == "lognormal" and d.fit is not None and d.fit.ks_d is not None


def test_a_predicted_run_is_marked_in_its_report_and_the_catalogue() -> None:
    from gridbench.family import family
    from gridbench.jobflow.report.predicted import predicted_findings

    assert predicted_findings({"id": "r1"}) == ()  # a measured run
    never = predicted_findings({"id": "p1", "predicted": {"model_name": "m", "checks": []}})
    assert never[0].text.startswith("Predicted, not measured") and never[1].status == "warn"
    check = {"run": "r1", "within": False, "errors": {"capacity": 0.2, "breaking stage": "a vs b"}}
    marks = predicted_findings({"id": "p2", "predicted": {"model_name": "m", "checks": [check]}})
    texts = " ".join(f.text for f in marks)
    assert "capacity off 20.0%" in texts and "breaking stage a vs b" in texts
    assert marks[1].status == "warn"
    checking = predicted_findings({"id": "p3", "predicted": {"checks": [], "checking": "r1"}})
    assert "gridbench compare r1 p3" in " ".join(f.text for f in checking)
    entry = family("jobflow").catalogue({"load_model": "open", "predicted": {}})
    assert entry.variant == "open · predicted"


def test_fit_uncertainty_perturbs_the_cv_as_well_as_the_mean() -> None:
    from gridbench.model.fitdist import perturbed

    rng = np.random.default_rng(5)
    d = fit_duration(rng.gamma(4.0, 0.25, 50))  # cv 0.5 from 50 samples
    draws = [perturbed(d, rng) for _ in range(400)]
    cvs = np.array([x.cv for x in draws])
    means = np.array([x.mean for x in draws])
    # the spread is the sampling error of 50 samples: about 7 % of the mean, 12 % of the cv
    assert 0.04 < np.std(means) / d.mean < 0.11 and 0.07 < np.std(cvs) / d.cv < 0.18
    expo = fit_duration(rng.exponential(1.0, 200)).model_copy(update={"dist": "exponential"})
    assert {perturbed(expo, rng).cv for _ in range(5)} == {expo.cv}  # its shape is fixed
