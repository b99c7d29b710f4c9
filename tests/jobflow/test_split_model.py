"""Speedup and overhead against a serial run, with the result checked (issue 40; the
seeds' 002 §6.1-6.2, 000 §4.6.2, §4.6.4, §4.8.3): the split load model runs one workload
as one job and as N parts at once, on the reference grid (simulated work: speedup,
efficiency, overhead; its output is no result, and the check says so) and on a live Slurm
(a real sum computed whole and in parts, the parts' sum checked against the whole; a
workload whose parts overlap is caught)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from conftest import BIN
from gridbench.errors import SpecError
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.spec import load_spec_text
from slurm_cluster import SlurmCluster, slurm_fixture  # noqa: F401 (the fixture slurm)

SUM = "import sys; p, n = int(sys.argv[1]), int(sys.argv[2]); N = 3000000; "


def _run(text: str, root: Path) -> tuple[Path, dict[str, Any], str]:
    (root / "spec.yaml").write_text(text)
    env = dict(os.environ, GRIDBENCH_RESULTS=str(root / "results"), COLUMNS="200")
    p = subprocess.run(
        [str(BIN), "run", str(root / "spec.yaml"), "--verbose"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode in (0, 1), p.stdout[-3000:] + p.stderr[-2000:]
    (run,) = list((root / "results").iterdir())
    return run, json.loads((run / "metrics.json").read_text()), p.stdout


def _makespans(run: Path, tid: str) -> tuple[float, float]:
    """(serial, parallel) makespans counted here from the raw events."""
    ev = read_trial_log(run / "trials" / tid)
    split = pl.col("attrs").str.json_path_match("$.split")
    subs = ev.filter(pl.col("stage") == "submit").select("job", split.alias("split"))
    ends = ev.filter(pl.col("stage") == "client_done").group_by("job").agg(pl.col("t_ns").min())
    t = subs.join(ev.filter(pl.col("stage") == "submit").select("job", "t_ns"), on="job")
    t = t.join(ends.rename({"t_ns": "end"}), on="job")
    s = t.filter(pl.col("split") == "serial")
    p = t.filter(pl.col("split") == "part")
    return (
        (s["end"][0] - s["t_ns"][0]) / 1e9,
        (p["end"].max() - p["t_ns"].min()) / 1e9,  # type: ignore[operator]
    )


def test_speedup_and_overhead_on_the_reference_grid(tmp_path: Path) -> None:
    run, m, out = _run(
        "name: split\nbackend: {type: reference, options: {preset: batched}}\n"
        "job: {runtime: 4s}\nload: {model: split, parts: 4, combine: none}\ntrials: 1\n"
        "timeouts: {status_interval: 0.1s, drain: 30s}\n",
        tmp_path,
    )
    (t,) = m["points"][0]["trials"]
    model = t["model"]
    serial, parallel = _makespans(run, t["trial_id"])
    assert model["serial_s"] == pytest.approx(serial) and serial >= 4.0
    assert model["parallel_s"] == pytest.approx(parallel) and parallel >= 1.0
    assert model["speedup"] == pytest.approx(serial / parallel)
    assert 1.5 < model["speedup"] < 4.0  # 4 s of work in 4 parts, with the grid's overhead
    assert model["efficiency"] == pytest.approx(model["speedup"] / 4)
    assert model["overhead_s"] == pytest.approx(parallel - serial / 4)
    assert model["result_equal"] is None and "no result check" in model["result_note"]
    assert "Split: speedup and overhead against a serial run" in out


def _slurm_spec(cluster: SlurmCluster, out: Path, code: str) -> str:
    cmd = json.dumps(["python3", "-c", SUM + code, "{part}", "{parts}"])
    return (
        f"name: split-slurm\nbackend: {{type: slurm, options: {{conf: {cluster.conf}, "
        f"output: '{out}/%j.out'}}}}\njob: {{command: {cmd}}}\n"
        "load: {model: split, parts: 4, combine: sum}\ntrials: 1\n"
        "timeouts: {status_interval: 0.2s, drain: 60s}\n"
    )


def test_the_parts_result_is_checked_against_the_serial_one_on_slurm(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    good = "print(sum(range(p * N // n, (p + 1) * N // n)))"
    (tmp_path / "a").mkdir()
    run, m, _ = _run(_slurm_spec(slurm, tmp_path / "a", good), tmp_path / "a")
    (t,) = m["points"][0]["trials"]
    model = t["model"]
    assert model["parts_done"] == 4 and model["serial_done"] is True, model
    assert model["result_equal"] is True, model
    serial, parallel = _makespans(run, t["trial_id"])
    assert model["speedup"] == pytest.approx(serial / parallel)
    assert model["overhead_s"] == pytest.approx(parallel - serial / 4)
    # the check is the outputs' own: the serial job printed N(N-1)/2
    outs = sorted((tmp_path / "a").glob("*.out"))
    assert any(p.read_text().strip() == str(3000000 * 2999999 // 2) for p in outs)
    # parts that overlap (each takes one number more) sum to more: caught
    bad = "print(sum(range(p * N // n, (p + 1) * N // n + 1)))"
    (tmp_path / "b").mkdir()
    _, m, out = _run(_slurm_spec(slurm, tmp_path / "b", bad), tmp_path / "b")
    model = m["points"][0]["trials"][0]["model"]
    assert model["result_equal"] is False and "DIFFERS" in model["statement"]
    assert "DIFFERS" in out


def test_split_spec_errors() -> None:
    base = "name: s\nbackend: {type: reference}\njob: {runtime: 1s}\nload: "
    with pytest.raises(SpecError, match=r"load\.parts.*greater than or equal to 2"):
        load_spec_text(base + "{model: split, parts: 1}\n", "s.yaml")
    with pytest.raises(SpecError, match="combine"):
        load_spec_text(base + "{model: split, combine: product}\n", "s.yaml")
