"""Virtual users (spec ``users``): load split by weight, submission under each user's own
account or token, and results broken down per user. Live Slurm for the accounts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest

from backend_run import failures, run_with, submit_users, trial
from conftest import BIN, cli_env
from gridbench.errors import SpecError
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.slurm.backend import SlurmBackend
from gridbench.jobflow.run.requests import user_order
from gridbench.jobflow.spec import load_spec_text
from slurm_cluster import SlurmCluster, rest_options, slurm_fixture  # noqa: F401 (fixture)
from unix_users import accounts_fixture  # noqa: F401 (fixture)


def test_user_order_interleaves_by_weight() -> None:
    order = user_order([2.0, 1.0, 1.0], slots=400)
    assert [order.count(k) for k in range(3)] == [200, 100, 100]
    # interleaved: never 3 jobs of one user in a row
    assert all(order[i : i + 3].count(order[i]) < 3 for i in range(len(order) - 3))


def test_local_run_splits_load_and_breaks_results_down(tmp_path: Path, results: Path) -> None:
    spec = tmp_path / "users.yaml"
    spec.write_text(
        """
name: two-users
backend: {type: local, options: {slots: 8}}
job: {command: ["true"]}
users:
  - {name: alice, weight: 2}
  - {name: bob}
load: {model: open, rate: 40/s}
trial: {jobs: 30}
timeouts: {status_interval: 0.1s}
"""
    )
    p = subprocess.run(
        [str(BIN), "run", str(spec), "--verbose"],  # the full tables
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Per user" in p.stdout
    (exp,) = [d for d in results.iterdir() if d.is_dir()]
    by_user = json.loads((exp / "metrics.json").read_text())["points"][0]["trials"][0]["by_user"]
    assert set(by_user) == {"alice", "bob"}
    assert (by_user["alice"]["jobs"], by_user["bob"]["jobs"]) == (20, 10)
    assert by_user["alice"]["completed"] == 20 and by_user["bob"]["failed"] == 0
    assert by_user["alice"]["overall"]["n"] == 20 and by_user["alice"]["overall"]["p50"] > 0
    users_csv = pl.read_csv(exp / "tables" / "users.csv")
    assert sorted(users_csv["user"].to_list()) == ["alice", "bob"]


def test_sustain_users_map_onto_declared_users(tmp_path: Path) -> None:
    backend = create_backend("local", {"slots": 8})
    out = run_with(
        """
name: sustain-users
backend: {type: local}
job: {command: ["true"]}
users: [{name: alice}, {name: bob}]
load: {model: sustain, users: 4, jobs_per_user: 2, sleep_coef: 0.05s}
trial: {duration: 1.5s}
timeouts: {status_interval: 0.1s}
""",
        tmp_path,
        backend,  # type: ignore[arg-type]
    )
    ev, _ = trial(out)
    sub = ev.filter(pl.col("stage") == "submit")
    per_agent = sub.group_by("agent").agg(
        pl.col("attrs").str.json_path_match("$.user").unique().alias("users")
    )
    # equal weights: virtual users 0 and 2 are alice, 1 and 3 bob, always
    got = {a: sorted(u) for a, u in per_agent.iter_rows()}
    assert got == {"user0": ["alice"], "user1": ["bob"], "user2": ["alice"], "user3": ["bob"]}


def test_users_spec_errors_are_clear() -> None:
    base = "name: x\nbackend: {type: local}\nload: {model: open, rate: 1/s}\ntrial: {jobs: 1}\n"
    with pytest.raises(SpecError) as err:
        load_spec_text(base + "users: [{name: a, credential: {env: A_JWT, file: /x}}]\n")
    assert "exactly one of env" in str(err.value) and "<spec>:5:" in str(err.value)
    with pytest.raises(SpecError) as err:
        load_spec_text(base + "users: [{name: a}, {name: a}]\n")
    assert "repeated: a" in str(err.value)
    with pytest.raises(SpecError) as err:
        load_spec_text(base + "users: [{name: a, account: 'root; rm -rf /'}]\n")
    assert "users.0.account" in str(err.value)


def test_unknown_account_fails_jobs_as_auth(tmp_path: Path) -> None:
    backend = create_backend("local", {"slots": 2})
    out = run_with(
        """
name: no-such-account
backend: {type: local}
job: {command: ["true"]}
users: [{name: ghost, account: gbtest-nobody-here}]
load: {model: open, rate: 20/s}
trial: {jobs: 2}
timeouts: {status_interval: 0.1s, drain: 5s}
""",
        tmp_path,
        backend,  # type: ignore[arg-type]
    )
    f = failures(trial(out)[0])
    assert f["kind"].to_list() == ["submit_auth"] * 2
    assert set(f["message"]) == {"there is no Unix user 'gbtest-nobody-here' on this host"}


def _owners(cluster: SlurmCluster, ev: pl.DataFrame) -> dict[str, str]:
    """Each job's Slurm owner, found by the backend id of its acknowledgement: the cluster
    is the session's, and another test's jobs may have the same gridbench names."""
    acks = ev.filter(pl.col("stage") == "submit_ack").select(
        "job", pl.col("attrs").str.json_path_match("$.backend_id").alias("id")
    )
    out = cluster.run("squeue", "-h", "-t", "all", "-o", "%i %u")
    by_id = dict(line.split() for line in out.splitlines() if line.strip())
    return {job: by_id[i] for job, i in acks.iter_rows() if i in by_id}


def test_slurm_jobs_run_under_each_users_account(
    slurm: SlurmCluster, accounts: list[str], tmp_path: Path
) -> None:
    alice, bob = accounts
    backend = create_backend("slurm", {"conf": str(slurm.conf)})
    assert isinstance(backend, SlurmBackend)
    out = run_with(
        f"""
name: slurm-accounts
backend: {{type: slurm}}
job: {{command: ["true"]}}
users: [{{name: alice, account: {alice}}}, {{name: bob, account: {bob}}}]
load: {{model: open, rate: 20/s}}
trial: {{jobs: 6}}
timeouts: {{status_interval: 0.2s, drain: 30s}}
""",
        tmp_path,
        backend,
    )
    ev, _ = trial(out)
    assert failures(ev).height == 0
    sub = submit_users(ev)
    owners = _owners(slurm, ev)
    want = {"alice": alice, "bob": bob}
    assert {j: owners[j] for j in sub["job"]} == {j: want[u] for j, u in sub.iter_rows()}
    assert sorted(sub["user"].to_list()) == ["alice"] * 3 + ["bob"] * 3


def test_slurm_rest_uses_each_users_token(
    slurm: SlurmCluster, accounts: list[str], tmp_path: Path
) -> None:
    alice, bob = accounts
    files = {}
    for u in accounts:
        f = tmp_path / f"{u}.jwt"
        f.write_text(slurm.token(user=u))
        f.chmod(0o600)
        files[u] = f
    admin = tmp_path / "root.jwt"
    admin.write_text(slurm.token())
    backend = create_backend("slurm", rest_options(slurm, admin))
    assert isinstance(backend, SlurmBackend)
    out = run_with(
        f"""
name: slurm-rest-tokens
backend: {{type: slurm}}
job: {{command: ["true"]}}
users:
  - {{name: alice, account: {alice}, credential: {{file: {files[alice]}}}}}
  - {{name: bob, account: {bob}, credential: {{file: {files[bob]}}}}}
load: {{model: open, rate: 20/s}}
trial: {{jobs: 4}}
timeouts: {{status_interval: 0.2s, drain: 30s}}
""",
        tmp_path / "results",
        backend,
    )
    ev, info = trial(out)
    assert failures(ev).height == 0
    sub = submit_users(ev)
    owners = _owners(slurm, ev)
    want = {"alice": alice, "bob": bob}
    assert {j: owners[j] for j in sub["job"]} == {j: want[u] for j, u in sub.iter_rows()}
    for f in (tmp_path / "results").rglob("*"):
        if f.is_file():
            text = f.read_text(errors="replace")
            assert all(t.read_text() not in text for t in files.values())
    assert info["status_calls"] == backend.calls["rest jobs"]


def test_plan_checks_accounts_and_credentials_up_front(tmp_path: Path) -> None:
    base = "name: x\nbackend: {type: local}\nload: {model: open, rate: 1/s}\ntrial: {jobs: 2}\n"
    cases = {
        "users: [{name: a, account: gbtest-nobody-here}]\n": "no Unix user 'gbtest-nobody-here'",
        f"users: [{{name: a, credential: {{file: {tmp_path}/missing.jwt}}}}]\n": "cannot be read",
        "users: [{name: a, credential: {env: GB_TEST_UNSET_VAR}}]\n": "GB_TEST_UNSET_VAR",
        "load: {model: batch, jobs: 4, bulk: 2}\n": "cannot submit in bulk",
    }
    for extra, words in cases.items():
        spec = tmp_path / "s.yaml"
        text = base.replace("load: {model: open, rate: 1/s}\n", "") if "bulk" in extra else base
        spec.write_text(text + extra)
        run = subprocess.run(
            [str(BIN), "run", str(spec), "--results", str(tmp_path / "r")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert run.returncode == 2, (extra, run.stdout, run.stderr)
        assert words in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert not (tmp_path / "r").exists()  # refused before a results directory
        # validate checks the spec, not this host: it passes where run would not
        valid = subprocess.run(
            [str(BIN), "validate", str(spec)], capture_output=True, text=True, timeout=60
        )
        assert valid.returncode == (2 if "bulk" in extra else 0), valid.stderr


def test_child_environment_carries_no_tokens() -> None:
    from gridbench.jobflow.backends.cli_run import scrub_secrets

    env = {
        "PATH": "/bin",
        "SLURM_JWT": "eyJhbGciOi.x.y",
        "BOB_TOKEN": "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJib2IifQ.c2ln",
        "MY_TOKEN_NAME": "plain",
        "GB_JWT": "anything",
    }
    assert scrub_secrets(env, ["GB_JWT"]) == {"PATH": "/bin", "MY_TOKEN_NAME": "plain"}
