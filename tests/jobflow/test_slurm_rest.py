"""The slurmrestd path of the slurm backend against live daemons: JWT auth, submit, list,
cancel, and what an expired, refused or missing token does.

The shared test cluster runs slurmrestd on loopback with ``rest_auth/jwt``
(tests/slurm_cluster.py); tokens come from ``scontrol token``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
from pathlib import Path

import pytest

from backend_run import backend_ids, failures, run_with, trial
from conftest import BIN, cli_env
from gridbench.errors import BackendError, SpecError
from gridbench.jobflow.backends.base import JobRequest, SubmitError
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.slurm.backend import SlurmBackend
from gridbench.jobflow.backends.slurm.rest import token_expiry
from gridbench.jobflow.experiment.check import check_config
from gridbench.jobflow.spec import load_spec_text, make_plan
from slurm_cluster import SlurmCluster, free_port, rest_options, slurm_fixture  # noqa: F401 (fixture)

CHAIN = ["submit", "slurm_submit", "slurm_eligible", "slurm_start", "slurm_end", "client_done"]


def token_file(cluster: SlurmCluster, tmp_path: Path, lifespan: int = 600) -> Path:
    path = tmp_path / f"jwt-{lifespan}"
    path.write_text(cluster.token(lifespan) + "\n")
    path.chmod(0o600)
    return path


def rest_backend(cluster: SlurmCluster, token: Path, **options: object) -> SlurmBackend:
    b = create_backend("slurm", rest_options(cluster, token, **options))
    assert isinstance(b, SlurmBackend)
    return b


def test_rest_path_runs_jobs_and_keeps_the_token_out(slurm: SlurmCluster, tmp_path: Path) -> None:
    token = token_file(slurm, tmp_path)
    backend = rest_backend(slurm, token)
    out = run_with(
        """
name: slurm-rest
backend: {type: slurm}
job: {command: [sh, -c, "echo 'it''s $HOME'; sleep 0.2"]}
load: {model: open, rate: 20/s}
trial: {jobs: 10}
timeouts: {status_interval: 0.2s, drain: 30s}
""",
        tmp_path / "results",
        backend,
    )
    assert out.status == "complete"
    ev, info = trial(out)
    assert failures(ev).height == 0
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    assert wide.height == 10
    assert wide.select(CHAIN).null_count().sum_horizontal().item() == 0
    for a, b in itertools.pairwise(CHAIN):
        assert (wide[a] <= wide[b]).all(), f"{a} after {b}"
    # every call went over REST: no sbatch, no squeue
    assert backend.calls["rest submit"] == 10 and backend.calls["sbatch"] == 0
    assert backend.calls["squeue --json"] == 0
    assert backend.calls["rest jobs"] == info["status_calls"] == info["status_sweeps"]
    # the jobs exist in Slurm under their gridbench names, and finished cleanly
    ids = backend_ids(ev)
    listed = slurm.run("squeue", "-h", "-t", "all", "-o", "%j %T", "-j", ",".join(ids))
    ours = dict(x.split() for x in listed.splitlines() if x.strip())
    assert ours == dict.fromkeys(ev["job"].unique(), "COMPLETED")
    # the secret never reaches the results store
    secret = token.read_text().strip()
    for f in (tmp_path / "results").rglob("*"):
        if f.is_file():
            assert secret not in f.read_text(errors="replace"), f


async def test_rest_rejection_keeps_slurms_reason(slurm: SlurmCluster, tmp_path: Path) -> None:
    # open() would refuse the unknown partition up front; the controller's own refusal is
    # what a partition removed mid-run (or a limit) gives, so submit without it
    backend = rest_backend(slurm, token_file(slurm, tmp_path), partition="nope")
    try:
        with pytest.raises(SubmitError) as err:
            await backend.submit(JobRequest("gb-rest-reject", ("true",)))
    finally:
        await backend.close()
    assert err.value.kind == "submit_rejected"
    assert err.value.message == "slurmrestd refused the job: Invalid partition name specified"


async def test_token_expiring_mid_run_fails_jobs_as_auth(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    token = token_file(slurm, tmp_path, lifespan=10)
    backend = rest_backend(slurm, token)
    await backend.open()
    try:
        bid = await backend.submit(JobRequest("gb-rest-early", ("true",)))
        assert bid.isdigit()
        expires = token_expiry(token.read_text().strip())
        assert expires is not None
        await asyncio.sleep(max(0.0, expires - time.time()) + 0.2)
        with pytest.raises(SubmitError) as err:
            await backend.submit(JobRequest("gb-rest-late", ("true",)))
        assert err.value.kind == "submit_auth"
        assert "expired at 20" in err.value.message
        with pytest.raises(BackendError) as berr:
            await backend.status([bid])
        assert "expired at" in str(berr.value) and "scontrol token" in str(berr.value)
    finally:
        await backend.close()


async def test_expired_missing_and_refused_tokens_stop_at_open(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    expired = token_file(slurm, tmp_path, lifespan=1)
    await asyncio.sleep(1.5)
    with pytest.raises(BackendError) as err:
        await rest_backend(slurm, expired).open()
    assert "expired at" in str(err.value) and "scontrol token" in str(err.value)

    b = create_backend(
        "slurm",
        {
            "conf": str(slurm.conf),
            "submit_via": "rest",
            "rest": {"url": slurm.rest_url, "token_env": "GB_TEST_NO_SUCH_VAR"},
        },
    )
    with pytest.raises(BackendError) as err:
        await b.open()
    assert "no Slurm JWT is set" in str(err.value) and "GB_TEST_NO_SUCH_VAR" in str(err.value)

    forged = tmp_path / "forged"
    head, _, _ = slurm.token().split(".")
    payload = "eyJleHAiOjQxMDI0NDQ4MDAsImlhdCI6MTcwMDAwMDAwMCwic3VuIjoicm9vdCJ9"
    forged.write_text(f"{head}.{payload}.AAAA")
    with pytest.raises(BackendError) as err:
        await rest_backend(slurm, forged).open()
    assert "slurmctld refused the request of root" in str(err.value)
    assert "scontrol token" in str(err.value)


async def test_slurmrestd_down_is_named(slurm: SlurmCluster, tmp_path: Path) -> None:
    b = create_backend(
        "slurm",
        {
            "conf": str(slurm.conf),
            "submit_via": "rest",
            "rest": {
                "url": f"http://127.0.0.1:{free_port()}",
                "token_file": str(token_file(slurm, tmp_path)),
            },
        },
    )
    with pytest.raises(BackendError) as err:
        await b.open()
    assert "slurmrestd does not answer" in str(err.value)
    assert "backend.options.rest.url" in str(err.value)


def test_rest_without_endpoint_is_a_spec_error() -> None:
    spec, data = load_spec_text(
        "name: x\nbackend: {type: slurm, options: {submit_via: rest}}\n"
        "load: {model: open, rate: 1/s}\ntrial: {jobs: 1}\n"
    )
    with pytest.raises(SpecError) as err:
        check_config([p.spec for p in make_plan(spec, data).points])
    assert "rest: {url:" in str(err.value)


def test_sweep_compares_sbatch_with_rest(
    slurm: SlurmCluster, tmp_path: Path, results: Path
) -> None:
    """One experiment, two points: the same load through sbatch and through slurmrestd."""
    spec = tmp_path / "paths.yaml"
    spec.write_text(
        f"""
name: sbatch-vs-rest
backend:
  type: slurm
  options:
    conf: {slurm.conf}
    rest: {{url: "{slurm.rest_url}", user: root}}
job: {{command: ["true"]}}
load: {{model: open, rate: 10/s}}
trial: {{jobs: 6}}
sweep: {{backend.options.submit_via: [sbatch, rest]}}
timeouts: {{status_interval: 0.2s, drain: 30s}}
"""
    )
    env = cli_env(results) | slurm.env | {"SLURM_JWT": slurm.token()}
    p = subprocess.run(
        [str(BIN), "run", str(spec), "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    (exp,) = [d for d in results.iterdir() if d.is_dir()]
    metrics = json.loads((exp / "metrics.json").read_text())
    points = metrics["points"]
    assert [pt["point"]["backend.options.submit_via"] for pt in points] == ["sbatch", "rest"]
    for pt in points:
        jobs = pt["trials"][0]["jobs"]
        assert jobs["completed"] == 6 and jobs["failed"] == 0
    assert env["SLURM_JWT"] not in (exp / "experiment.json").read_text()
