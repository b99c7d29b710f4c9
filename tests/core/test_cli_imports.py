"""The command line answers at once because it imports only what a command needs: each
command runs here in a fresh interpreter, which then says what it imported. No timing is
asserted (bench/bench_cli_start.py times them); what is imported is what takes the time.

``--version`` and every ``--help`` import none of the heavy packages: the parser is built
from the commands' declarations (gridbench.commandline), never from their code. A spec is
validated without any analysis or report module (job flow's without numpy, polars,
pyarrow or scipy either), and ``list`` reads the store's summaries without them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLUGINS = ROOT / "tests" / "plugins"

#: what the parser never needs: each costs tens or hundreds of milliseconds to import
HEAVY = ("scipy", "polars", "pyarrow", "numpy", "fastapi", "simpy", "dask", "grpc")
HEAVY_MORE = (*HEAVY, "distributed", "starlette", "uvicorn", "plotly", "statsmodels", "zmq")

#: run gridbench's main as the console script does, then print what was imported
PROBE = """
import contextlib, io, json, sys
from gridbench.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
doc = {"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}
sys.__stdout__.write(json.dumps(doc))
"""


def imported(*args: str, results: Path, plugins: bool = False) -> tuple[set[str], str]:
    """The modules ``gridbench ARGS`` imported in a fresh interpreter, and what it printed."""
    env = cli_env(results)
    if plugins:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PLUGINS), env.get("PYTHONPATH", "")) if p
        )
    p = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    return set(doc["modules"]), doc["out"]


def heavy_in(modules: set[str], names: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


def analysis_or_report(modules: set[str]) -> list[str]:
    """gridbench's analysis and report modules among ``modules`` (any family's, and the
    generic renderers, pipeline, comparison and dashboard)."""
    found = []
    for m in modules:
        parts = m.split(".")
        if parts[0] != "gridbench":
            continue
        generic = parts[1:2] in (["report"], ["pipeline"], ["compare"], ["web"])
        if generic or any("analysis" in p or p.startswith("report") for p in parts[1:]):
            found.append(m)
    return sorted(found)


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["io", "--help"],
        ["net", "--help"],
        ["study", "serve", "--help"],
        ["model", "predict", "--help"],
        ["reference", "serve", "--help"],
        ["serve", "--help"],
        ["lab", "up", "--help"],
        ["compare", "--help"],
    ],
    ids=" ".join,
)
def test_version_and_help_import_no_heavy_package(args: list[str], tmp_path: Path) -> None:
    modules, out = imported(*args, results=tmp_path)
    assert "usage: gridbench" in out or out.startswith("gridbench ")
    assert not heavy_in(modules, HEAVY_MORE), heavy_in(modules, HEAVY_MORE)
    # no command's code either: only the declarations
    assert not analysis_or_report(modules), analysis_or_report(modules)
    assert "gridbench.jobflow.commands" not in modules and "gridbench.model.commands" not in modules


def test_version_loads_no_family(tmp_path: Path) -> None:
    """``--version`` is answered before any parser is built: no family is loaded."""
    from gridbench import __version__

    modules, out = imported("--version", results=tmp_path)
    assert out == f"gridbench {__version__}\n"
    loaded = [m for m in modules if m.startswith("gridbench.") and m.count(".") > 1]
    assert "gridbench.family" not in modules and not loaded, loaded


@pytest.mark.parametrize(
    "args",
    [
        ["validate", str(EXAMPLES / "local-sleep-ramp.yaml")],
        ["plan", str(EXAMPLES / "local-sleep-ramp.yaml")],
        ["validate", str(EXAMPLES / "io-local-quick.yaml")],
        ["validate", str(EXAMPLES / "net-loopback-quick.yaml")],
        ["validate", str(EXAMPLES / "study-ahe.yaml")],
    ],
    ids=lambda a: " ".join([a[0], Path(a[1]).name]),
)
def test_a_spec_is_validated_without_analysis_or_reports(args: list[str], tmp_path: Path) -> None:
    modules, out = imported(*args, results=tmp_path)
    assert "valid" in out or "plan" in out or "points" in out, out
    assert not analysis_or_report(modules), analysis_or_report(modules)
    assert not heavy_in(modules, ("fastapi", "simpy", "dask", "grpc", "starlette", "uvicorn"))


def test_job_flow_s_spec_loads_without_numpy_polars_pyarrow_or_scipy(tmp_path: Path) -> None:
    """Job flow's spec names its load models, whose runs use numpy and polars: the models
    import them on first use, so ``gridbench validate`` does not pay for them."""
    modules, _ = imported("validate", str(EXAMPLES / "local-sleep-ramp.yaml"), results=tmp_path)
    assert not heavy_in(modules), heavy_in(modules)


def test_list_reads_summaries_without_analysis(tmp_path: Path) -> None:
    root = tmp_path / "results"
    for i in range(3):
        run = root / f"2026010{i}T000000Z-r{i}"
        run.mkdir(parents=True)
        kind = ("jobflow", "io", "study")[i]
        (run / "experiment.json").write_text(
            json.dumps({"id": run.name, "name": f"r{i}", "kind": kind, "status": "complete"})
        )
    modules, out = imported("list", results=root)
    assert "r0" in out and "r2" in out
    assert not heavy_in(modules, HEAVY_MORE), heavy_in(modules, HEAVY_MORE)
    # a table for the command line may come from the report package, no renderer
    tables = {"gridbench.report", "gridbench.report.records_table"}
    found = [m for m in analysis_or_report(modules) if m not in tables]
    assert not found, found


def test_a_plugin_family_is_in_help_and_its_code_is_not_run(tmp_path: Path) -> None:
    """The timeit plugin declares its command: --help lists it without running its code."""
    modules, out = imported("--help", results=tmp_path, plugins=True)
    assert "timeit" in out and "time a local command N times" in out
    modules, out = imported("timeit", "run", "--help", results=tmp_path, plugins=True)
    assert "the spec YAML" in out and "--results DIR" in out
    assert not heavy_in(modules, HEAVY_MORE), heavy_in(modules, HEAVY_MORE)
