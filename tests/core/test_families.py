"""Generic commands on a run of any family, by the kind recorded in it: an io run keeps
its io metrics and report through analyze/report/show (it used to be re-analysed as job
flow, which replaced its metrics.json and report.html with an empty job-flow analysis)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.family import available, family, kind_of
from gridbench.store.catalogue import find_run, list_runs

SPEC = """\
name: fam-io
targets:
  - {{name: a, path: {a}}}
  - {{name: b, path: {b}}}
baseline: a
repetitions: 1
iozone: {{file_size: 1M, record_size: 64k, tests: [write, read]}}
plan:
  items: [a local directory, another local directory]
  features: [sequential write and read]
  not_tested: [random I/O]
  approach: one repetition of each test
  pass_criteria: the read figure is measured
"""


def gb(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def planned_io_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("fam")
    a, b = tmp / "a", tmp / "b"
    a.mkdir()
    b.mkdir()
    spec = tmp / "io.yaml"
    spec.write_text(SPEC.format(a=a, b=b))
    results = tmp / "results"
    p = gb("io", "run", str(spec), results=results)
    assert p.returncode == 0, p.stdout + p.stderr
    [run] = [d for d in results.iterdir() if (d / "experiment.json").is_file()]
    return results, run


def _io_metrics(run: Path) -> dict[str, object]:
    m = json.loads((run / "metrics.json").read_text())
    assert m["schema"] == "gridbench.io/1"
    return m  # type: ignore[no-any-return]


def test_analyze_and_report_keep_io_results(planned_io_run: tuple[Path, Path]) -> None:
    results, run = planned_io_run
    before = _io_metrics(run)
    cells = {(e["target"], e["test"]) for e in before["matrix"]}  # type: ignore[union-attr]
    assert cells == {("a", "write"), ("a", "read"), ("b", "write"), ("b", "read")}
    for command in ("analyze", "report"):
        p = gb(command, str(run), results=results)
        assert "Traceback" not in p.stdout + p.stderr
        assert p.returncode == 0, p.stdout + p.stderr
        after = _io_metrics(run)
        assert {(e["target"], e["test"]) for e in after["matrix"]} == cells  # type: ignore[union-attr]
        html = (run / "report.html").read_text()
        assert "speedup = (candidate" in html  # the io report, not an empty job-flow one
        assert "points" not in after  # not a job-flow analysis
    p = gb("analyze", str(run), "--json", results=results)
    assert p.returncode == 0 and json.loads(p.stdout)["schema"] == "gridbench.io/1"


def test_show_and_list_an_io_run(planned_io_run: tuple[Path, Path]) -> None:
    results, run = planned_io_run
    p = gb("show", str(run), results=results)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr and "gridbench analyze" not in p.stdout
    p = gb("list", "--json", results=results)
    [entry] = json.loads(p.stdout)
    assert entry["kind"] == "io" and entry["target"] == "a, b"
    assert entry["variant"] == "storage vs a"
    assert "backend" not in entry and "load_model" not in entry  # no faked fields


def test_cleanup_says_it_does_not_apply(planned_io_run: tuple[Path, Path]) -> None:
    results, run = planned_io_run
    p = gb("cleanup", str(run), results=results)
    assert p.returncode == 2
    assert "does not apply to io runs" in p.stderr and "Traceback" not in p.stderr
    assert len([ln for ln in p.stderr.splitlines() if ln.strip()]) <= 2  # one message + fix


def test_registry_and_kinds() -> None:
    assert {"jobflow", "io"} <= set(available())
    assert family("io").name == "io" and family("jobflow").schema == "gridbench.metrics/1"
    assert kind_of({}) == "jobflow" and kind_of({"kind": "io"}) == "io"
    assert kind_of({"kind": 3}) == "jobflow"  # foreign data never crashes the lookup
    entry = family("jobflow").catalogue({"backend": "slurm", "load_model": "open"})
    assert (entry.target, entry.variant) == ("slurm", "open")
    assert [(c.heading, c.text) for c in entry.columns] == [("trials", "–")]  # none planned
    assert set(entry.search) >= {"slurm", "open"}  # the list search covers its fields
    assert family("io").catalogue({"targets": "garbage"}).target == "storage"


def test_unknown_kind_is_one_clear_error(tmp_path: Path) -> None:
    run = tmp_path / "alien"
    run.mkdir()
    (run / "experiment.json").write_text(json.dumps({"id": "alien", "kind": "quantum"}))
    p = gb("analyze", str(run), results=tmp_path)
    assert p.returncode == 2 and "unknown benchmark family 'quantum'" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_symlinked_run_folder_is_neither_listed_nor_found(tmp_path: Path) -> None:
    root, outside = tmp_path / "results", tmp_path / "elsewhere"
    for run in (root / "real-run", outside / "planted-run"):
        run.mkdir(parents=True)
        (run / "experiment.json").write_text(json.dumps({"id": run.name, "kind": "io"}))
    (root / "planted-run").symlink_to(outside / "planted-run", target_is_directory=True)
    assert [r["id"] for r in list_runs(root)] == ["real-run"]
    assert find_run(root, "planted-run") is None  # neither by folder name
    assert find_run(root, "planted") is None  # nor by a prefix
    found = find_run(root, "real-run")
    assert found is not None and found.path == root / "real-run"
    # the CLI still takes an explicit path the user gives
    p = gb("show", str(outside / "planted-run"), results=root)
    assert "Traceback" not in p.stderr and "planted-run" in p.stdout + p.stderr


def test_plan_block_validates_with_clear_errors(tmp_path: Path) -> None:
    good = Path(__file__).parents[2] / "examples" / "sustain-reference.yaml"
    p = gb("validate", str(good), results=tmp_path)
    assert p.returncode == 0, p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: p\nbackend: {type: noop}\nload: {model: open, rate: 1/s}\n"
        "trial: {duration: 2s}\nplan:\n  items: 3\n  feature: [x]\n"
    )
    p = gb("validate", str(bad), results=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{bad}:6: field 'plan.items'" in p.stderr
    assert f"{bad}:7: field 'plan.feature'" in p.stderr
