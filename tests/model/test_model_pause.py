"""The sequential poller's pause, fitted right when a gap between T7 stamps holds several
calls (issue 40): on stamps of a replayed poller, and on a reference-grid configuration
that was not used while the fit was developed (0.18 s a call, a 0.45 s pause), whose
latency just below the knee the model then predicts within 15%."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from gridbench.model.fit import status_policy
from gridbench.model.fitpause import refine_pause
from test_model import gridbench, metrics

pytestmark = pytest.mark.e2e
COST, PAUSE = 0.18, 0.45  # capacity 1 / 0.18 = 5.6 jobs/s: 5/s is just below the knee


def poller(
    rate: float, n: int, cost: float, pause: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """T3, T6 and T7 of ``n`` jobs under the reference grid's sequential UpdateManager."""
    rng = np.random.default_rng(7)
    listed = np.arange(n) / rate + 0.05
    ready = listed + 1.0 + rng.uniform(0, 0.2, n)
    done = np.full(n, np.inf)
    t = 0.013
    while np.isinf(done).any():
        for j in np.flatnonzero((listed < t) & np.isinf(done)):
            t += cost
            if ready[j] <= t:
                done[j] = t
        t += pause
    return listed, ready, done


@pytest.mark.parametrize(("cost", "pause"), [(0.22, 0.3), (0.35, 0.5), (0.1, 0.45)])
def test_the_pause_is_replayed_from_the_stamps(cost: float, pause: float) -> None:
    listed, ready, done = poller(2.0, 60, cost, pause)
    trial = np.zeros(listed.size, dtype=np.int64)
    gaps_only = status_policy(done, trial)
    fitted = status_policy(done, trial, listed, ready)
    assert fitted.per_job_cost_s == pytest.approx(cost, abs=0.005)
    assert fitted.interval_s == pytest.approx(pause, abs=0.01)
    # the gaps alone read the newest job's call (never finished) into the pause
    if (cost, pause) == (0.22, 0.3):
        assert gaps_only.interval_s == pytest.approx(pause + cost, abs=0.01)
    # two trials stacked: each is replayed on its own
    both = np.concatenate([trial, trial + 1])
    two = status_policy(np.concatenate([done, done]), both, np.tile(listed, 2), np.tile(ready, 2))
    assert two.interval_s == pytest.approx(pause, abs=0.01)


def test_no_gap_across_a_pass_keeps_the_first_reading() -> None:
    one = np.array([1.0])
    assert refine_pause(one, one, one, np.zeros(1, dtype=np.int64), 0.2, 0.7) == 0.7
    assert refine_pause(one, one, one, np.zeros(1, dtype=np.int64), 0.0, 0.7) == 0.7


def test_a_configuration_not_used_while_developing_is_predicted_within_15_percent(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    sets = ["trials=1", "sweep.rate=[1/s,2/s,5/s]", "trial.duration=15s"]
    sets += [f"backend.options.grid.status_update.per_job_cost_s={COST}"]
    sets += [f"backend.options.grid.status_update.interval_s={PAUSE}"]
    p = gridbench(["demo", *[a for s in sets for a in ("--set", s)]], results)
    assert p.returncode in (0, 1), p.stdout[-2000:] + p.stderr[-2000:]
    (run,) = list(results.iterdir())
    model = tmp_path / "m.yaml"
    p = gridbench(["model", "fit", str(run), "--rates", "1/s,2/s", "--out", str(model)], results)
    assert p.returncode == 0, p.stderr
    from gridbench.model.spec import load_model

    su = load_model(model).status_update
    assert su is not None and su.policy == "sequential"
    assert su.per_job_cost_s == pytest.approx(COST, abs=0.02)
    assert su.interval_s == pytest.approx(PAUSE, abs=0.03), su  # not PAUSE + COST
    p = gridbench(["model", "check", str(model), str(run), "--json"], results)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = json.loads(p.stdout.strip().splitlines()[-1])
    predicted = next(r for r in results.iterdir() if r != run)
    meas, pred = metrics(run), metrics(predicted)
    for mp, pp in zip(meas["points"], pred["points"], strict=True):
        lm = np.mean([t["latency"]["overall"]["mean"] for t in mp["trials"]])
        lp = np.mean([t["latency"]["overall"]["mean"] for t in pp["trials"]])
        assert abs(lp - lm) / lm <= 0.15, (mp["offered_rate_per_s"], lm, lp)
    assert any(r["figure"] == "latency below the knee" for r in rows)
    # each latency row: the prediction's interval covers the measurement, or says why not
    lat = [r for r in rows if r["figure"].startswith("latency")]
    assert lat and all(r["ci95"] is not None for r in lat), lat
    assert all(r["covered"] or r["why"] for r in lat), lat
