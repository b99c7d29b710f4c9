"""metrics.json is foreign input: its structure is checked (jobflow/metrics_schema.py,
io/metrics_schema.py) before a report reads it. Real metrics of both families validate;
a malformed one gives one ResultsError naming the file and the first bad field, and
``gridbench show`` exits 2 with that message and no traceback."""

from __future__ import annotations

import copy
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import report_fixtures as fx
from conftest import BIN, cli_env
from gridbench.errors import ResultsError
from gridbench.io.metrics_schema import validate_metrics as validate_io
from gridbench.jobflow.metrics_schema import validate_metrics as validate_jobflow
from gridbench.jobflow.report.model import check_metrics

REFERENCE_SPEC = """\
name: schema-ref
backend:
  type: reference
  options:
    preset: batched
    grid: {reports: {rotate_s: 1, publication_delay_s: 0.2}}
job: {runtime: 0.2s}
load: {model: open, rate: 4/s}
sweep: {rate: [4/s, 8/s]}
trials: 2
trial: {duration: 2s}
timeouts: {status_interval: 0.2s, drain: 20s, settle: 10s}
collectors: [{type: edgi, reports: auto, poll: 0.5s}]
thresholds:
  - {metric: latency.overall.p99, op: "<", value: 30}
  - {metric: no.such.metric, op: "<", value: 1}
"""

IO_SPEC = """\
name: schema-io
targets:
  - {{name: a, path: {a}}}
  - {{name: b, path: {b}}}
baseline: a
repetitions: 2
iozone: {{file_size: 1M, record_size: 64k, tests: [write, read, reread]}}
thresholds:
  - {{metric: matrix.b.write.kbps.mean, op: ">", value: 1}}
"""


def gb(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=300
    )


def _only_run(results: Path) -> Path:
    [run] = [d for d in results.iterdir() if (d / "experiment.json").is_file()]
    return run


@pytest.fixture(scope="module")
def schema_jf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("schema-ref")
    spec = tmp / "ref.yaml"
    spec.write_text(REFERENCE_SPEC)
    p = gb("run", str(spec), "--yes", results=tmp / "results")
    assert p.returncode in (0, 1), p.stdout + p.stderr  # 1: the unknown metric fails
    return _only_run(tmp / "results")


@pytest.fixture(scope="module")
def schema_io_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("schema-io")
    a, b = tmp / "a", tmp / "b"
    a.mkdir()
    b.mkdir()
    spec = tmp / "io.yaml"
    spec.write_text(IO_SPEC.format(a=a, b=b))
    p = gb("io", "run", str(spec), results=tmp / "results")
    assert p.returncode in (0, 1), p.stdout + p.stderr
    return _only_run(tmp / "results")


def _metrics(run: Path) -> dict[str, Any]:
    data = json.loads((run / "metrics.json").read_text())
    assert isinstance(data, dict)
    return data


def _error(validate: Any, data: Any, where: str = "metrics.json") -> str:
    with pytest.raises(ResultsError) as info:
        validate(data, where)
    return str(info.value)


# --- real metrics validate ---------------------------------------------------------------


def test_real_jobflow_metrics_validate(schema_jf_run: Path) -> None:
    m = _metrics(schema_jf_run)
    assert m["points"] and m["points"][0]["trials"]
    assert validate_jobflow(m, str(schema_jf_run / "metrics.json")) is m
    check_metrics(m)


def test_real_io_metrics_validate(schema_io_run: Path) -> None:
    m = _metrics(schema_io_run)
    assert m["matrix"] and m["thresholds"]
    assert validate_io(m, str(schema_io_run / "metrics.json")) is m


def test_report_fixtures_validate() -> None:
    """The report tests' fixture (also its hostile-text variant) is a valid document."""
    for hostile in (False, True):
        validate_jobflow(fx.make_metrics(hostile=hostile))


def test_extra_fields_and_nulls_stay_compatible(schema_jf_run: Path) -> None:
    m = copy.deepcopy(_metrics(schema_jf_run))
    m["added_later"] = {"anything": [1, "x"]}
    t = m["points"][0]["trials"][0]
    t["latency"]["overall"]["p99"] = None
    t["latency"]["overall"]["p9999"] = 1.5
    t["new_section"] = "text"
    m["knee"] = None
    validate_jobflow(m)


# --- malformed metrics: one clear error naming the field -----------------------------------


def _jobflow_cases(m: dict[str, Any]) -> list[tuple[str, Any, str, str]]:
    """(what, document, field path, message) of each malformed variant."""

    def variant(change: Any) -> dict[str, Any]:
        d = copy.deepcopy(m)
        change(d)
        return d

    def trial(d: dict[str, Any]) -> dict[str, Any]:
        t: dict[str, Any] = d["points"][0]["trials"][1]
        return t

    return [
        (
            "a trial that is a string",
            variant(lambda d: d["points"][0]["trials"].__setitem__(1, "trial")),
            "points.0.trials.1",
            "valid dictionary",
        ),
        (
            "a latency p99 that is a string",
            variant(lambda d: trial(d)["latency"]["overall"].__setitem__("p99", "12.5")),
            "points.0.trials.1.latency.overall.p99",
            "Input should be a valid number, got '12.5'",
        ),
        (
            "a bool where a number goes",
            variant(lambda d: trial(d)["throughput"]["submit"].__setitem__("steady", True)),
            "points.0.trials.1.throughput.submit.steady",
            "valid number",
        ),
        (
            "a job count that is a fraction",
            variant(lambda d: trial(d)["jobs"].__setitem__("completed", 2.5)),
            "points.0.trials.1.jobs.completed",
            "valid integer",
        ),
        (
            "valid as a string",
            variant(lambda d: trial(d).__setitem__("valid", "yes")),
            "points.0.trials.1.valid",
            "true or false",
        ),
        (
            "points missing",
            variant(lambda d: d.pop("points")),
            "points",
            "Field required",
        ),
        (
            "points an object",
            variant(lambda d: d.__setitem__("points", {"0": {}})),
            "points",
            "valid list",
        ),
        (
            "deeply nested garbage",
            variant(
                lambda d: d["points"][0]["summary"]["latency"].__setitem__(
                    "overall", {"mean": [[[{"x": "y" * 10_000}]]]}
                )
            ),
            "points.0.summary.latency.overall.mean",
            "valid number",
        ),
        (
            "a threshold verdict that is a number",
            variant(lambda d: d["thresholds"][0].__setitem__("passed", 1)),
            "thresholds.0.passed",
            "true or false",
        ),
        (
            "a chain stage that is a list",
            variant(lambda d: d["chain"]["stages"].__setitem__(0, ["submit"])),
            "chain.stages.0",
            "valid dictionary",
        ),
    ]


def test_malformed_jobflow_metrics_name_the_field(schema_jf_run: Path) -> None:
    m = _metrics(schema_jf_run)
    where = str(schema_jf_run / "metrics.json")
    for what, doc, path, message in _jobflow_cases(m):
        text = _error(validate_jobflow, doc, where)
        assert f"{where}: {path}: " in text, (what, text)
        assert message in text, (what, text)
        assert f"gridbench analyze {schema_jf_run}" in text, (what, text)
        assert len(text) < 400, (what, text)  # the garbage is not echoed in full
        with pytest.raises(ResultsError):  # the report's own check says the same
            check_metrics(doc, where)


def test_more_bad_fields_are_counted_not_listed(schema_jf_run: Path) -> None:
    m = copy.deepcopy(_metrics(schema_jf_run))
    for t in m["points"][0]["trials"]:
        t["failure_rate"] = "high"
    text = _error(validate_jobflow, m)
    assert "metrics.json: points.0.trials.0.failure_rate: " in text
    assert f"(and {len(m['points'][0]['trials']) - 1} more bad field" in text


def test_not_an_object_or_another_schema() -> None:
    for data in ([1, 2], "text", None, 3):
        text = _error(validate_jobflow, data)
        assert "metrics.json: metrics is not a JSON object" in text
        assert "fix: re-run 'gridbench analyze RUN'" in text
    text = _error(validate_jobflow, {"schema": "gridbench.io/1", "points": []})
    assert "metrics.json: schema: unsupported metrics schema 'gridbench.io/1'" in text
    text = _error(validate_io, {"schema": "gridbench.metrics/1", "matrix": []})
    assert "metrics.json: schema: unsupported metrics schema 'gridbench.metrics/1'" in text


def test_malformed_io_metrics_name_the_field(schema_io_run: Path) -> None:
    m = _metrics(schema_io_run)
    where = str(schema_io_run / "metrics.json")
    cases: list[tuple[Any, str, str]] = []

    d = copy.deepcopy(m)
    d["matrix"][1]["kbps"]["mean"] = "fast"
    cases.append((d, "matrix.1.kbps.mean", "valid number, got 'fast'"))
    d = copy.deepcopy(m)
    d["matrix"][0] = "entry"
    cases.append((d, "matrix.0", "valid dictionary"))
    d = copy.deepcopy(m)
    del d["matrix"]
    cases.append((d, "matrix", "Field required"))
    d = copy.deepcopy(m)
    d["thresholds"][0]["passed"] = "no"
    cases.append((d, "thresholds.0.passed", "true or false"))
    d = copy.deepcopy(m)
    d["validity"]["flags"] = [{"runtime_ms": {"a": [1, 2, {"b": None}]}}]
    cases.append((d, "validity.flags.0.runtime_ms", "valid number"))
    d = copy.deepcopy(m)
    d["latency_cdf"][0]["ms"][3] = None
    d["latency_cdf"][0]["cdf"] = "0.5"
    cases.append((d, "latency_cdf.0.cdf", "valid list"))
    for doc, path, message in cases:
        text = _error(validate_io, doc, where)
        assert f"{where}: {path}: " in text and message in text, (path, text)
        assert f"gridbench analyze {schema_io_run}" in text


# --- the commands --------------------------------------------------------------------------


def _corrupt(run: Path, tmp: Path, change: Any) -> Path:
    copy_ = tmp / run.name
    subprocess.run(["cp", "-r", str(run), str(copy_)], check=True)
    m = _metrics(copy_)
    change(m)
    (copy_ / "metrics.json").write_text(json.dumps(m))
    return copy_


def test_show_on_corrupted_jobflow_metrics_exits_2(schema_jf_run: Path, tmp_path: Path) -> None:
    def change(m: dict[str, Any]) -> None:
        m["points"][0]["trials"][0]["latency"]["overall"]["p99"] = "fast"

    run = _corrupt(schema_jf_run, tmp_path, change)
    p = gb("show", str(run), results=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert "points.0.trials.0.latency.overall.p99: Input should be a valid number" in p.stderr
    assert f"gridbench analyze {run}" in p.stderr


def test_show_on_corrupted_io_metrics_exits_2(schema_io_run: Path, tmp_path: Path) -> None:
    run = _corrupt(schema_io_run, tmp_path, lambda m: m["matrix"].__setitem__(0, "entry"))
    p = gb("show", str(run), results=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert f"{run / 'metrics.json'}: matrix.0: Input should be a valid dictionary" in p.stderr


def test_show_on_half_written_metrics_exits_2(schema_jf_run: Path, tmp_path: Path) -> None:
    run = _corrupt(schema_jf_run, tmp_path, lambda m: None)
    text = (run / "metrics.json").read_text()
    (run / "metrics.json").write_text(text[: len(text) // 2])
    p = gb("show", str(run), results=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert "metrics.json" in p.stderr


# --- the cost --------------------------------------------------------------------------------


def test_validation_is_cheap(schema_jf_run: Path) -> None:
    m = _metrics(schema_jf_run)
    validate_jobflow(m)  # warm
    start = time.perf_counter()
    for _ in range(20):
        validate_jobflow(m)
    assert (time.perf_counter() - start) / 20 < 0.05
