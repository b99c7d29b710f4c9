"""Job size as a sweep dimension (issue 14 item 3): ``job.tasks`` / ``job.nodes`` reach
Slurm as ``--ntasks`` / ``--nodes`` on a live 4-node cluster (one slurmd per emulated
node), the probe model's sweep over them gets a growth fit, and bad sizes are refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from backend_run import run_with
from gridbench.errors import SpecError
from gridbench.jobflow.analysis import analyze_run
from gridbench.jobflow.backends.base import JobRequest, JobSizer
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.backends.slurm.backend import SlurmBackend
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.check import check_config
from gridbench.jobflow.report.headline import headline
from gridbench.jobflow.spec import load_spec_text, make_plan
from psij_run import psij_backend
from slurm_cluster import (  # noqa: F401 (fixtures)
    MULTI_NODES,
    SlurmCluster,
    rest_options,
    slurm4_fixture,
    slurm_fixture,
)

PROBE = """
name: job-size
backend: {type: slurm}
job: {command: [sh, -c, "sleep 2"]}
load: {model: probe, operation: submit, count: 2, gap: 0.2s}
timeouts: {status_interval: 0.2s, drain: 60s}
"""


def _backend(c: SlurmCluster) -> SlurmBackend:
    b = create_backend("slurm", {"conf": str(c.conf)})
    assert isinstance(b, SlurmBackend)
    return b


def _acked(run: Path, trial: str) -> list[str]:
    ev = read_trial_log(run / "trials" / trial)
    acks = ev.filter(pl.col("stage") == "submit_ack")
    return [str(x) for x in acks["attrs"].str.json_path_match("$.backend_id").to_list()]


def _num_nodes(c: SlurmCluster, job_id: str) -> int:
    out = c.run("scontrol", "-o", "show", "job", job_id)
    m = re.search(r"\bNumNodes=(\d+)", out)
    assert m, out
    return int(m.group(1))


def test_node_sweep_spans_that_many_nodes(slurm4: SlurmCluster, tmp_path: Path) -> None:
    assert slurm4.run("sinfo", "-h", "-N", "-o", "%N").split() == [
        f"gbnode{i}" for i in range(1, MULTI_NODES + 1)
    ]
    spec = PROBE + "sweep: {job.nodes: [1, 2, 3, 4]}\n"
    out = run_with(spec, tmp_path, _backend(slurm4))
    assert out.status == "complete", out.error
    for point, nodes in enumerate((1, 2, 3, 4)):
        ids = _acked(out.run.path, f"p{point:02d}-t00")
        assert len(ids) == 2
        # Slurm itself says each job spanned that many nodes
        assert [_num_nodes(slurm4, i) for i in ids] == [nodes, nodes]
    m = analyze_run(out.run.path, write=True)
    (g,) = [g for g in m["growth"] if g["parameter"] == "job.nodes"]
    assert g["n"] == 4 and g["x"] == [1.0, 2.0, 3.0, 4.0]
    assert g["model"] in ("constant", "linear", "nlogn", "quadratic")
    # sbatch's time hardly depends on the node count: with 2 jobs a point the fitted slope
    # is noise and may fall as well as grow (a falling fit failed one run on a loaded VM)
    assert g["statement"].startswith("submission time ")
    assert "x = job.nodes" in g["statement"] or "constant" in g["statement"]
    texts = [f.text for f in headline(m).findings]
    assert f"growth: {g['statement']}" in texts


def test_task_sweep_fits_submission_time(slurm4: SlurmCluster, tmp_path: Path) -> None:
    spec = PROBE + "sweep: {job.tasks: [1, 2, 4, 8]}\n"
    out = run_with(spec, tmp_path, _backend(slurm4))
    assert out.status == "complete", out.error
    ids = _acked(out.run.path, "p03-t00")
    shown = slurm4.run("scontrol", "-o", "show", "job", ids[0])
    assert "NumTasks=8" in shown
    m = analyze_run(out.run.path, write=True)
    (g,) = [g for g in m["growth"] if g["parameter"] == "job.tasks"]
    assert g["n"] == 4 and g["x"] == [1.0, 2.0, 4.0, 8.0]
    assert isinstance(g["model"], str) and g["model"]
    assert g["statement"].endswith("(x = job.tasks)")
    assert all(y > 0 for y in g["y"])  # real submission times were fitted


STATUS = """
name: status-vs-nodes
backend: {type: slurm}
job: {command: [sleep, "120"]}
load: {model: probe, operation: status, status_of: running, count: 3, gap: 0.1s}
timeouts: {status_interval: 0.2s, drain: 30s}
sweep: {job.nodes: [1, 2, 4]}
"""


def test_status_time_against_the_nodes_a_running_job_spans(
    slurm4: SlurmCluster, tmp_path: Path
) -> None:
    out = run_with(STATUS, tmp_path, _backend(slurm4))
    assert out.status == "complete", out.error
    for point, nodes in enumerate((1, 2, 4)):
        ev = read_trial_log(out.run.path / "trials" / f"p{point:02d}-t00")
        ends = ev.filter(pl.col("stage") == "op_end")
        attrs = [json.loads(a) for a in ends["attrs"].to_list()]
        probes = [a for a in attrs if a.get("op") == "status"]
        assert len(probes) == 3
        # each probe queried the real job while it ran on that many nodes
        assert {a["state"] for a in probes} == {"running"}
        (job,) = {a["job"] for a in probes}
        assert _num_nodes(slurm4, job) == nodes
    assert slurm4.job_ids() == []  # the running jobs were cancelled at the end
    m = analyze_run(out.run.path, write=True)
    (g,) = [g for g in m["growth"] if g["parameter"] == "job.nodes"]
    assert g["n"] == 3 and g["x"] == [1.0, 2.0, 4.0]
    assert g["statement"].startswith("status-query time") and g["statement"].endswith(
        "(x = job.nodes)"
    )
    assert f"growth: {g['statement']}" in [f.text for f in headline(m).findings]


def test_a_status_job_that_cannot_start_ends_the_trial_with_the_fix(
    slurm4: SlurmCluster, tmp_path: Path
) -> None:
    spec = (
        STATUS.replace("sweep: {job.nodes: [1, 2, 4]}\n", "")
        .replace('command: [sleep, "120"]', 'command: [sleep, "120"], nodes: 4')
        .replace("count: 3", "count: 1, start_timeout: 2s")
    )
    blocker = slurm4.run(
        "sbatch",
        "--parsable",
        "--exclusive",
        "-N",
        "1",
        "--output=/dev/null",
        "--wrap",
        "sleep 60",
    ).strip()  # --output: not a slurm-N.out in the directory the suite runs from
    try:
        out = run_with(spec, tmp_path, _backend(slurm4))
    finally:
        slurm4.run("scancel", blocker.split(";")[0], check=False)
    (t,) = out.trials
    assert "not running" in str(t.error) and "load.start_timeout" in str(t.error), out
    assert [j for j in slurm4.job_ids() if j != blocker.split(";")[0]] == []


def test_more_nodes_than_the_cluster_is_a_refused_submission(
    slurm4: SlurmCluster, tmp_path: Path
) -> None:
    spec = PROBE.replace("job: {", "job: {nodes: 5, ").replace("count: 2", "count: 1")
    out = run_with(spec, tmp_path, _backend(slurm4))
    ev = read_trial_log(out.run.path / "trials" / "p00-t00")
    failed = ev.filter(pl.col("stage") == "failed")
    assert failed.height == 1
    attrs = json.loads(failed["attrs"][0])
    assert attrs["kind"].startswith("submit")
    assert "node" in attrs["message"].lower()  # sbatch's own words
    assert ev.filter(pl.col("stage") == "submit_ack").height == 0


def _spec_error(text: str) -> SpecError:
    with pytest.raises(SpecError) as exc:
        spec, data = load_spec_text(text)
        check_config([p.spec for p in make_plan(spec, data).points], host=False)
    return exc.value


@pytest.mark.parametrize(
    ("size", "words"),
    [
        ("tasks: 0", "job.tasks"),
        ("nodes: -1", "job.nodes"),
        ("tasks: 2, nodes: 4", "below job.nodes"),
    ],
)
def test_bad_sizes_are_spec_errors(size: str, words: str) -> None:
    err = _spec_error(PROBE.replace("job: {", f"job: {{{size}, "))
    assert words in f"{err.where} {err.message}"


def test_bad_swept_size_names_the_point() -> None:
    err = _spec_error(PROBE + "sweep: {job.nodes: [1, 0]}\n")
    assert "job.nodes" in f"{err.where} {err.message}"


def test_backends_that_cannot_size_a_job_refuse_at_validate() -> None:
    text = PROBE.replace("type: slurm", "type: local").replace("job: {", "job: {tasks: 4, ")
    err = _spec_error(text)
    assert err.where == "job.tasks" and "cannot size a job" in err.message
    assert err.fix and "slurm" in err.fix
    ref = PROBE.replace("type: slurm", "type: reference").replace("job: {", "job: {nodes: 2, ")
    assert _spec_error(ref).where == "job.nodes"


def test_command_backend_needs_the_placeholders() -> None:
    opts = {
        "submit": {"argv": ["echo", "{name}", "{tasks}"], "pattern": r"(?P<id>\S+)"},
        "status": {"argv": ["true", "{ids}"], "pattern": r"(?P<id>\S+) (?P<state>\S+)"},
    }
    b = create_backend("command", opts)
    assert isinstance(b, JobSizer)
    assert b.job_size_problem(4, None) is None
    problem = b.job_size_problem(4, 2)
    assert problem is not None and "{nodes}" in problem


def test_sbatch_argv_and_rest_body_carry_the_size() -> None:
    b = create_backend("slurm", {})
    assert isinstance(b, SlurmBackend)
    job = JobRequest("j", ("true",), tasks=8, nodes=2)
    argv = b.submit_argv(job)
    assert "--ntasks=8" in argv and "--nodes=2" in argv
    desc, _ = b._rest_job(job)
    assert desc["tasks"] == 8 and desc["nodes"] == "2-2"
    assert not any(a.startswith(("--ntasks", "--nodes")) for a in b.submit_argv(JobRequest("j")))
    clash = create_backend("slurm", {"sbatch_args": ["-N2"]})
    assert isinstance(clash, SlurmBackend)
    assert clash.job_size_problem(None, 2) is not None
    assert clash.job_size_problem(None, None) is None


def test_rest_submission_carries_the_size(slurm: SlurmCluster, tmp_path: Path) -> None:
    token = tmp_path / "jwt"
    token.write_text(slurm.token())
    backend = create_backend("slurm", rest_options(slurm, token))
    assert isinstance(backend, SlurmBackend)
    spec = PROBE.replace("job: {", "job: {tasks: 3, nodes: 1, ").replace("count: 2", "count: 1")
    out = run_with(spec, tmp_path / "r", backend)
    assert out.status == "complete", out.error
    (bid,) = _acked(out.run.path, "p00-t00")
    shown = slurm.run("scontrol", "-o", "show", "job", bid)
    assert "NumTasks=3" in shown and _num_nodes(slurm, bid) == 1


def test_psij_resource_spec_reaches_slurm(
    slurm4: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in slurm4.env.items():  # PSI/J runs sbatch with the process environment
        monkeypatch.setenv(key, value)
    backend = psij_backend(
        executor="slurm",
        poll_interval_s=0.5,
        work_directory=str(tmp_path / "psij"),
        queue="debug",
    )
    spec = PROBE.replace("type: slurm", "type: psij").replace("count: 2", "count: 1")
    spec = spec.replace("job: {", "job: {tasks: 4, nodes: 2, ")
    out = run_with(spec, tmp_path / "r", backend)
    assert out.status == "complete", out.error
    (bid,) = _acked(out.run.path, "p00-t00")
    shown = slurm4.run("scontrol", "-o", "show", "job", bid)
    assert "NumTasks=4" in shown and _num_nodes(slurm4, bid) == 2


def test_command_backend_passes_the_size_to_its_template(tmp_path: Path) -> None:
    spec = """
name: sized-command
backend:
  type: command
  options:
    submit: {argv: [echo, "{name}:{tasks}:{nodes}"], pattern: '^(?P<id>\\S+)$'}
    status: {argv: ["true", "{ids}"], pattern: '^(?P<id>\\S+) (?P<state>\\S+)$', missing: done}
job: {tasks: 6, nodes: 3}
load: {model: probe, operation: submit, count: 1, gap: 0.1s}
timeouts: {status_interval: 0.1s, drain: 10s}
"""
    parsed, data = load_spec_text(spec)
    check_config([p.spec for p in make_plan(parsed, data).points], host=False)
    backend = create_backend("command", parsed.backend.options)
    out = run_with(spec, tmp_path, backend)  # type: ignore[arg-type]
    assert out.status == "complete", out.error
    assert _acked(out.run.path, "p00-t00") == ["p00-t00-000000:6:3"]


def test_sge_refuses_a_size_at_validate() -> None:
    err = _spec_error(
        PROBE.replace("type: slurm", "type: sge").replace("job: {", "job: {tasks: 2, ")
    )
    assert err.where == "job.tasks" and "sge" in err.message
