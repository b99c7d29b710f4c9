"""Hardening, round 3 (issue 41): models without bounds. ``model predict`` estimates what
it will simulate and refuses more than its cap unless ``--max-jobs`` lifts it; intervals of
1 ns are refused by the model file's bounds; ``model fit`` of an ordinary noop run (jobs
ending the instant they start) infers no concurrency of 0. The real CLI throughout; each
test failed on the code before (the first two hung, the last ended in an internal error)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import BIN, cli_env

EDGI = """
schema: gridbench.model/1
client: {to_ce: {mean: 0.005}, ack: {mean: 0.004}, observe: {mean: 0.05}}
tiers:
  ce: {concurrency: 4, service: {dist: lognormal, mean: 0.05, cv: 0.5}}
  transfer: {delay: {mean: 0.02}}
  bridge: {service: {mean: 0.05}}
  workers: {slots: 64, runtime: {mean: 1.0}}
status_update: {policy: sequential, per_job_cost_s: 0.35, interval_s: 0.5}
"""
CHAIN = """
schema: gridbench.model/1
chain:
  - {stage: queued, kind: delay, service: {mean: 0.01}}
  - {stage: started, kind: tier, concurrency: 2, service: {mean: 0.0}, dispatch: {interval_s: 1.0}}
  - {stage: ended, kind: delay, service: {mean: 0.5}, job: true}
"""


def gb(tmp: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(BIN), *args], env=cli_env(tmp / "results"), capture_output=True, text=True,
        timeout=timeout, cwd=tmp,
    )  # fmt: skip
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert "internal error" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def test_a_prediction_of_a_trillion_jobs_is_refused_with_its_estimate(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(EDGI)
    t0 = time.monotonic()
    p = gb(tmp_path, "model", "predict", "m.yaml", "--rate", "1000000/s", "--duration",
           "1000000s", "--reps", "1", timeout=30)  # fmt: skip
    assert time.monotonic() - t0 < 20
    assert p.returncode == 2, p.stdout + p.stderr
    assert "about 1,000,000,000,000 job(s)" in p.stderr and "--max-jobs" in p.stderr, p.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_prediction_says_its_estimate_and_the_flag_lifts_the_cap(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(EDGI)
    p = gb(tmp_path, "model", "predict", "m.yaml", "--rate", "10/s", "--duration", "10s",
           "--reps", "1", "--max-jobs", "50")  # fmt: skip
    assert p.returncode == 2 and "more than the 50 allowed" in p.stderr, p.stderr
    p = gb(tmp_path, "model", "predict", "m.yaml", "--rate", "10/s", "--duration", "10s",
           "--reps", "1", "--max-jobs", "1000")  # fmt: skip
    assert p.returncode in (0, 1), p.stdout + p.stderr
    assert "about 100 job(s)" in p.stderr, p.stderr


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("dispatch: {interval_s: 1.0}", "dispatch: {interval_s: 1.0e-9}", "dispatch.interval_s"),
        ("concurrency: 2,", "concurrency: 2, queue_limit: 100000000000,", "queue_limit"),
    ],
)
def test_a_model_field_past_its_bounds_is_one_error(
    tmp_path: Path, old: str, new: str, field: str
) -> None:
    """Old code: a dispatch interval of 1 ns never finished (a pass every simulated ns)."""
    assert old in CHAIN
    (tmp_path / "m.yaml").write_text(CHAIN.replace(old, new))
    p = gb(tmp_path, "model", "predict", "m.yaml", "--reps", "1", "--duration", "5s",
           "--drain", "10s", timeout=30)  # fmt: skip
    assert p.returncode == 2 and field in p.stderr, p.stderr


def test_a_status_update_every_nanosecond_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(EDGI.replace("interval_s: 0.5", "interval_s: 1.0e-9"))
    p = gb(tmp_path, "model", "predict", "m.yaml", "--reps", "1", timeout=30)
    assert p.returncode == 2 and "status_update.interval_s" in p.stderr, p.stderr


def test_fit_of_a_noop_run_infers_no_concurrency_of_zero(tmp_path: Path) -> None:
    """Jobs that end the instant they start are never running at once: old code inferred
    a concurrency of 0, and the model (concurrency >= 1) ended fit in an internal error."""
    (tmp_path / "noop.yaml").write_text(
        "name: noop\nbackend: {type: local}\njob: {command: [/bin/true]}\n"
        "load: {model: open, rate: 20/s}\nsweep: {rate: [20/s, 50/s]}\n"
        "trial: {duration: 3s}\ntimeouts: {drain: 20s}\n"
    )
    assert gb(tmp_path, "run", "noop.yaml", timeout=120).returncode in (0, 1)
    p = gb(tmp_path, "model", "fit", "latest", "--out", "noop.model.yaml")
    assert p.returncode == 0, p.stdout + p.stderr
    model = yaml.safe_load((tmp_path / "noop.model.yaml").read_text())
    limits = [st.get("concurrency") for st in model["chain"]]
    assert all(c is None or c >= 1 for c in limits), model["chain"]
    p = gb(tmp_path, "model", "predict", "noop.model.yaml", "--reps", "1", "--duration", "3s")
    assert p.returncode in (0, 1), p.stdout + p.stderr
