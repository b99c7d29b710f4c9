"""``gridbench compare`` / ``history`` on real experiments recorded by the CLI.

Three runs of one spec against the embedded reference grid (a real HTTP CE -> bridge ->
worker pool, started by the backend and stopped by it): two with the same configuration,
one with the CE's service time raised from 0.05 s to 0.3 s. The comparison must flag the
slower CE preparation as a significant regression and find (almost) nothing between the
two identical runs. Noop-backend runs supply a second backend and the incompatible cases.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, cli_env
from gridbench.compare import Comparison, history, load_comparison, load_experiment
from gridbench.errors import ResultsError

pytestmark = pytest.mark.e2e

REFERENCE_SPEC = """\
name: cmp-ref
backend:
  type: reference
  options:
    preset: batched
    grid: {reports: {rotate_s: 1, publication_delay_s: 0.2}}
job: {runtime: 0.2s}
load: {model: open, rate: 4/s}
sweep: {rate: [4/s, 8/s]}
trials: 3
trial: {duration: 2s}
timeouts: {status_interval: 0.2s, drain: 20s, settle: 10s}
collectors: [{type: edgi, reports: auto, poll: 0.5s}]
"""
SLOW_CE = "backend.options.grid.ce.service.mean=0.3"

NOOP_SPEC = """\
name: cmp-noop
backend: {type: noop}
job: {runtime: 0.2s}
load: {model: open, rate: 4/s}
sweep: {rate: [4/s, 8/s]}
trials: 2
trial: {duration: 2s}
timeouts: {status_interval: 0.1s}
"""
NOOP_OTHER_RATES = """\
name: cmp-noop-fast
backend: {type: noop}
load: {model: open, rate: 16/s}
trials: 1
trial: {duration: 1s}
"""
NOOP_BATCH = """\
name: cmp-batch
backend: {type: noop}
load: {model: batch, jobs: 20, submitters: 2}
trials: 2
"""


def gridbench(results: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=timeout
    )
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    return p


def record(results: Path, spec_dir: Path, name: str, text: str, *sets: str) -> str:
    """Run a spec through ``gridbench run`` and return the new experiment's id."""
    spec = spec_dir / f"{name}.yaml"
    spec.write_text(text, encoding="utf-8")
    before = {p.name for p in results.iterdir()} if results.is_dir() else set()
    extra = [a for s in sets for a in ("--set", s)]
    p = gridbench(results, "run", str(spec), "-y", *extra)
    assert p.returncode == 0, f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    (new,) = {p.name for p in results.iterdir()} - before
    assert (results / new / "metrics.json").is_file()
    return new


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("compare")
    results = base / "results"
    ids = {
        "a": record(results, base, "a", REFERENCE_SPEC),
        "b": record(results, base, "b", REFERENCE_SPEC),
        "slow": record(results, base, "slow", REFERENCE_SPEC, SLOW_CE),
        "noop": record(results, base, "noop", NOOP_SPEC),
        "noop_rates": record(results, base, "noop_rates", NOOP_OTHER_RATES),
        "batch": record(results, base, "batch", NOOP_BATCH),
    }
    return {"root": results, **ids}


def diff_of(c: Comparison, point: str, metric: str, experiment: str) -> Any:
    p = next(p for p in c.points if p.key == point)
    m = p.metric(metric)
    assert m is not None, f"{metric} not compared at {point}"
    return next(d for d in m.diffs if d.experiment == experiment)


def test_slower_ce_is_a_significant_regression(store: dict[str, Any]) -> None:
    c = load_comparison(store["root"], [store["a"], store["slow"]])
    assert [p.key for p in c.points] == ["rate=4/s", "rate=8/s"]
    for point in ("rate=4/s", "rate=8/s"):
        d = diff_of(c, point, "latency.ce_prep.mean", store["slow"])
        assert d.test == "welch-t-clustered"
        assert d.significant and d.verdict == "regressed", d
        assert d.ratio is not None and d.ratio > 3.0  # 0.05 s -> 0.3 s service time
        assert d.p_adjusted is not None and d.p_adjusted < 0.05
    # the added 0.25 s shows in the overall latency too: a smaller effect, which few short
    # trials may not establish after the correction, so only its direction is required
    for point in ("rate=4/s", "rate=8/s"):
        d = diff_of(c, point, "latency.overall.mean", store["slow"])
        assert d.ratio is not None and d.ratio > 1.1, d
        assert d.verdict != "improved"
    # segments the change did not touch stay unflagged
    for point in ("rate=4/s", "rate=8/s"):
        assert not diff_of(c, point, "latency.dg.mean", store["slow"]).significant
    assert any("different specs" in n for n in c.notes)


#: the client's own sub-millisecond timings (the submit call, and the hop to the CE it
#: includes): they time the machine running the test, whose load drifts between two runs
#: recorded a few seconds apart (the suite once saw both 1.2-1.7x slower in the second
#: run, genuinely significant), not the system the rerun repeats
CLIENT_TIMINGS = ("latency.submit_call.", "latency.submit_to_ce.", "latency.submit_lag.")


def test_identical_rerun_is_mostly_not_significant(store: dict[str, Any]) -> None:
    c = load_comparison(store["root"], [store["a"], store["b"]])
    tested = [
        (p.key, m.metric)
        for p in c.points
        for m in p.metrics
        for d in m.diffs
        if d.p_value is not None and not m.metric.startswith(CLIENT_TIMINGS)
    ]
    assert len(tested) > 50
    flagged = [
        (p.key, m.metric) for p, m, _ in c.significant() if not m.metric.startswith(CLIENT_TIMINGS)
    ]
    assert len(flagged) <= max(2, len(tested) // 20), flagged
    for point in ("rate=4/s", "rate=8/s"):
        assert not diff_of(c, point, "latency.ce_prep.mean", store["b"]).significant
    assert not any("different specs" in n for n in c.notes)


def test_three_way_and_dict_shape(store: dict[str, Any]) -> None:
    c = load_comparison(store["root"], [store["a"], store["b"], store["slow"]])
    d = c.to_dict()
    json.dumps(d, allow_nan=False)  # JSON-safe for the web API
    assert d["schema"] == "gridbench.compare/1"
    assert d["baseline"] == store["a"]
    assert [e["id"] for e in d["experiments"]] == [store["a"], store["b"], store["slow"]]
    assert d["settings"]["correction"] == "benjamini-hochberg"
    pt = d["points"][0]
    m = pt["metrics"]["latency.ce_prep.mean"]
    assert [v["experiment"] for v in m["values"]] == [store["a"], store["b"], store["slow"]]
    assert [x["experiment"] for x in m["diffs"]] == [store["b"], store["slow"]]
    v = m["values"][0]
    metrics = json.loads((store["root"] / store["a"] / "metrics.json").read_text())
    used = metrics["points"][0]["summary"]["used_trials"]  # a trial may be invalid (late)
    assert v["n"] == used >= 2 and v["jobs"] == v["jobs_total"] and v["jobs"] >= 5 * used
    assert v["low"] < v["value"] < v["high"]
    series = d["series"]["latency.ce_prep.mean"][store["slow"]]
    assert series["x"] == [4.0, 8.0] and series["y"][0] > 0.25
    assert d["significant_count"] == len(c.significant()) >= 2


def test_two_backends_compare_on_shared_metrics(store: dict[str, Any]) -> None:
    c = load_comparison(store["root"], [store["noop"], store["a"]])
    names = {m.metric for m in c.metric_info}
    assert "latency.overall.mean" in names and "throughput.overall.steady" in names
    assert not any(n.startswith("latency.ce_prep") for n in names)  # noop has no CE
    d = diff_of(c, "rate=8/s", "latency.overall.mean", store["a"])
    # the grid adds its CE/bridge hops and polling to the same 0.2 s job
    assert d.significant and d.verdict == "regressed" and d.ratio is not None and d.ratio > 1.2


def test_down_sampling_is_reported(store: dict[str, Any]) -> None:
    run = load_experiment(store["root"], store["a"], max_samples=10)
    assert run.downsampled
    assert all(a.size <= 10 for per in run.samples.values() for a in per.values())
    totals = run.samples_total[0]["overall"]
    assert totals > 10
    full = load_experiment(store["root"], store["a"])
    assert not full.downsampled and full.samples[0]["overall"].size == totals


def test_history_of_one_metric(store: dict[str, Any]) -> None:
    h = history(store["root"], store["b"], "latency.ce_prep.mean")
    assert [e.experiment for e in h.entries] == [store["a"], store["b"], store["slow"]]
    assert h.points == ("rate=4/s", "rate=8/s") and h.better == "lower"
    same = [e.same_config for e in h.entries]
    assert same == [True, True, False]
    last = h.entries[-1]
    assert all(last.vs_previous[k].ratio > 3.0 for k in h.points)  # type: ignore[operator]
    assert any(last.vs_previous[k].significant for k in h.points)
    assert not any(d.significant for d in h.entries[1].vs_previous.values())
    d = h.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["schema"] == "gridbench.history/1" and d["match"] == "spec name"
    assert d["series"]["rate=4/s"]["experiment"] == [store["a"], store["b"], store["slow"]]
    # an experiment-level path gives one value per run
    k = history(store["root"], store["a"], "experiment.validity.valid")
    assert list(k.points) == ["experiment"] and len(k.entries) == 3


def test_cli_compare_table_and_json(store: dict[str, Any]) -> None:
    root = store["root"]
    p = gridbench(root, "compare", store["a"], store["slow"])
    assert p.returncode == 0, p.stderr
    assert "rate=4/s" in p.stdout and "latency.ce_prep.mean" in p.stdout and "worse" in p.stdout
    p = gridbench(root, "compare", store["a"], store["slow"], "--fail-on-regression")
    assert p.returncode == 1
    p = gridbench(
        root, "compare", store["a"], store["b"], "--json", "--metric", "latency.overall.*"
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {m["metric"] for m in d["metrics"]} == {
        "latency.overall.mean",
        "latency.overall.p50",
        "latency.overall.p99",
    }
    p = gridbench(root, "history", store["a"], "--metric", "latency.overall.p99", "--json")
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)["entries"]) == 3
    p = gridbench(root, "history", store["a"], "--metric", "latency.ce_prep.mean")
    assert p.returncode == 0 and "worse" in p.stdout, p.stdout


def _error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "fix:" in p.stderr
    return p.stderr


def test_bad_input_gives_one_clear_message(store: dict[str, Any]) -> None:
    root = store["root"]
    # through the CLI: exit 2 and one message with the fix, never a traceback
    assert "no experiment 'nope'" in _error(gridbench(root, "compare", store["a"], "nope"))
    assert "at least two" in _error(gridbench(root, "compare", store["a"]))
    assert "load model" in _error(gridbench(root, "compare", store["a"], store["batch"]))
    # the same errors reach the dashboard as ResultsError with where and fix
    cases = [
        ([store["a"], store["a"]], None, "given twice"),
        ([store["a"], store["noop_rates"]], None, "no sweep point"),
        ([store["a"], store["b"]], ["nothing.*"], "no compared metric"),
    ]
    for ids, metrics, text in cases:
        with pytest.raises(ResultsError) as exc:
            load_comparison(root, ids, metrics=metrics)
        assert text in exc.value.message and exc.value.where and exc.value.fix
    with pytest.raises(ResultsError) as exc:
        history(root, store["a"], "latency.nowhere.p99")
    assert "names no number" in exc.value.message and exc.value.where == "--metric"
    assert "--alpha" in _error(
        gridbench(root, "history", store["a"], "--metric", "x", "--alpha", "2")
    )


def test_torn_or_missing_metrics(store: dict[str, Any], tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    for key in ("a", "b"):
        shutil.copytree(store["root"] / store[key], root / store[key])
    metrics = root / store["b"] / "metrics.json"
    text = metrics.read_text()
    metrics.write_text(text[: len(text) // 2])  # a torn write
    with pytest.raises(ResultsError) as exc:
        load_comparison(root, [store["a"], store["b"]])
    assert "not valid JSON" in exc.value.message and "analyze" in (exc.value.fix or "")
    assert str(metrics) in (exc.value.where or "")
    metrics.unlink()
    err = _error(gridbench(root, "compare", store["a"], store["b"]))
    assert "not been analysed" in err and f"gridbench analyze {store['b']}" in err
    # the history skips the unanalysed run and says so
    h = history(root, store["a"], "latency.overall.mean")
    assert [e.experiment for e in h.entries] == [store["a"]]
    assert store["b"] in h.skipped
