"""Summaries that never hide a problem (issue 41), read as a new user reads them: the CLI
at 80 columns, both as a terminal (a pty) and as a pipe.

- ``list``, ``history`` and ``compare`` keep every id and value whole at any width; outside
  a terminal one record a line;
- a void comparison comes before every warning and never hides behind "--verbose", and a
  verdict with a problem never reads "pass";
- ``show`` prints the summary first, not the raw record;
- a run stopped by Ctrl-C never prints "done";
- a difference inside the noise of the repetitions says so.

Each test failed on the code before (noted per test)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, cli_env
from gridbench.store.layout import RunDir
from test_net_analysis import ping, sockperf

LONG = "a-long-experiment-name-that-makes-the-id-wide-" + "x" * 20
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def net_run(root: Path, name: str, records: list[dict[str, Any]]) -> RunDir:
    """A net run of ``records`` (as tests/net/test_net_analysis.py makes one), named."""
    run = RunDir.create(root, name)
    run.spec_file.write_text(f"name: {name}\n", encoding="utf-8")
    run.update_experiment(
        kind="net", name=name, status="complete", environments=["host"],
        patterns=["pingpong"], floor_factor=2.0, pingpong_tests=3, pingpong_round_trips=4,
        created="2026-01-01T00:00:00+00:00",
    )  # fmt: skip
    text = "".join(json.dumps(r) + "\n" for r in records)
    (run.path / "records.jsonl").write_text(text, encoding="utf-8")
    return run


def pinged(ms: float, transport: str = "tcp") -> list[dict[str, Any]]:
    return [ping(transport, "host", 64, t, [ms, ms * 1.1]) for t in range(3)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two runs of one long name (analysed), the first with figures 50x better than the
    network's floor (a void comparison) beside a few warnings; the second ordinary."""
    root = tmp_path_factory.mktemp("sum") / "results"
    void = net_run(root, LONG, pinged(0.01) + pinged(0.011, "zmq") + [sockperf("host", 64, 0.5)])
    fine = net_run(root, LONG, [*pinged(0.6), sockperf("host", 64, 0.5)])
    for run in (void, fine):
        p = gb(root, "analyze", str(run.path))
        assert p.returncode in (0, 1), p.stdout + p.stderr
    return {"root": root, "void": void, "fine": fine}


def gb(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**cli_env(root), "COLUMNS": "80"}
    p = subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def tty(root: Path, columns: int, *args: str) -> str:
    """The CLI's output as a terminal of ``columns`` shows it (a pty), escapes removed."""
    env = {**cli_env(root), "COLUMNS": str(columns), "LINES": "60", "TERM": "xterm"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI on the pty
        os.execve(str(BIN), [str(BIN), *args], env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    os.close(fd)
    return ANSI.sub("", out.decode(errors="replace")).replace("\r", "")


@pytest.mark.parametrize("columns", [80, 120])
def test_list_keeps_every_id_whole_as_a_terminal(store: dict[str, Any], columns: int) -> None:
    """Old code: ``list`` at 80 columns broke each 80-character id over 4 to 6 lines."""
    out = tty(store["root"], columns, "list")
    for run in (store["void"], store["fine"]):
        assert run.id in out, out
    assert all(len(line) <= columns for line in out.splitlines() if run.id not in line), out


def test_list_as_a_pipe_is_one_record_a_line(store: dict[str, Any]) -> None:
    out = gb(store["root"], "list").stdout.splitlines()
    assert out[1].split("\t")[:3] == ["id", "status", "verdict"], out
    rows = [line.split("\t") for line in out[2:]]
    assert {r[0] for r in rows} == {store["void"].id, store["fine"].id}, out


def test_history_keeps_ids_and_values_whole(store: dict[str, Any]) -> None:
    """Old code: ``history`` cut ids and values to ``202611…`` and ``2.01±0…``."""
    metric = "pingpong.tcp.host.64.rtt_ms"
    for out in (
        tty(store["root"], 80, "history", store["fine"].id, "--metric", metric),
        gb(store["root"], "history", store["fine"].id, "--metric", metric).stdout,
    ):
        assert store["void"].id in out and store["fine"].id in out, out
        assert "…" not in out, out
        assert re.search(r"0\.01\d*±0\.0\d+", out) and re.search(r"0\.630±0\.\d+", out), out


def test_compare_keeps_ids_and_values_whole(store: dict[str, Any]) -> None:
    out = tty(store["root"], 80, "compare", store["void"].id, store["fine"].id)
    assert store["void"].id in out and store["fine"].id in out and "…" not in out, out


def test_a_void_comparison_leads_the_summary_and_the_verdict(store: dict[str, Any]) -> None:
    """Old code: the void finding was the one hidden behind "4 more finding(s): --verbose",
    and the list said ``pass (52 above the floor)``."""
    root, void = store["root"], store["void"]
    verdict = json.loads(void.experiment_file.read_text())["verdict"]
    assert verdict.startswith("void"), verdict
    for out in (gb(root, "show", void.id).stdout, tty(root, 80, "show", void.id)):
        first = out.index("the comparison is void")
        assert "✓" not in out[:first] and "!" not in out[:first], out
        assert "✓" not in out.split("╰")[0], out  # no plain pass beside it
    fine = json.loads(store["fine"].experiment_file.read_text())["verdict"]
    assert not fine.startswith("void"), fine


def test_show_prints_the_summary_before_the_record(store: dict[str, Any]) -> None:
    """Old code: ``show`` printed the whole experiment.json first (an io run: ~190 lines of
    raw file names before its summary)."""
    out = gb(store["root"], "show", store["void"].id).stdout
    assert out.index("the comparison is void") < out.index('"kind"'), out
    assert '"environments"' not in out and "more field(s)" in out, out


def test_paths_never_wrap_outside_a_terminal(store: dict[str, Any]) -> None:
    """Old code: a pipe got every line wrapped at 80 columns, paths too."""
    p = gb(store["root"], "analyze", str(store["fine"].path))
    lines = p.stdout.splitlines()
    assert any(str(store["fine"].path) in line for line in lines), p.stdout


def test_an_aborted_run_never_reads_pass() -> None:
    from gridbench.states import verdict_tone, with_state

    assert with_state("pass (invalid trials)", "aborted") == "aborted (invalid trials)"
    assert with_state("invalid (2 invalid trials)", "aborted") == "aborted (2 invalid trials)"
    assert with_state("fail", "aborted") == "aborted (fail)"
    assert with_state("pass", "complete") == "pass"
    assert verdict_tone("void (5 better than the floor)") == "bad"
    assert verdict_tone("invalid (1 invalid trials)") == "warn"


def test_invalid_trials_make_no_pass() -> None:
    """Old code: job flow's verdict read ``pass (invalid trials)``."""
    from gridbench.family import family

    metrics = {"thresholds": [], "validity": {"valid": False, "invalid_trials": ["p00-t01"]}}
    assert family("jobflow").verdict(metrics) == "invalid (1 invalid trials)"


def test_ctrl_c_leaves_the_progress_stopped_not_done(tmp_path: Path) -> None:
    """Old code: an interrupted run's last progress line read ``io 92/92 (10 s) done``."""
    from rich.console import Console

    from gridbench.cliargs import run_and_show

    class Ui:
        def __init__(self) -> None:
            self.console = Console(file=sys.stdout, force_terminal=False, width=80)
            self.err_console = self.console

        def analyze_and_show(self, run_path: Path, *, as_json: bool = False) -> int:
            return 0

    class Runner:
        def __init__(self, step: Any) -> None:
            self.step = step
            self.run: RunDir | None = None

        def execute(self) -> None:
            self.run = RunDir.create(tmp_path, "x")
            self.step("first")
            self.step("second")
            raise KeyboardInterrupt

    ui = Ui()
    import contextlib
    import io

    buf = io.StringIO()
    ui.console = Console(file=buf, force_terminal=False, width=80)
    with contextlib.suppress(SystemExit):
        run_and_show(ui, "io", 92, Runner, interrupted="the run was stopped")  # type: ignore[arg-type]
    text = buf.getvalue()
    assert not re.search(r"io \d+/92 \(\d+ s\) done$", text, re.M), text
    assert re.search(r"io 2/92 \(\d+ s\) interrupted$", text, re.M), text


def test_speedups_inside_the_noise_say_so() -> None:
    """Two targets on one disk: old code said "speedup -51% ... +68%" and nothing more."""
    from gridbench.io.report import _speedup_findings

    def entry(target: str, test: str, mean: float, ci: float, sp: float | None) -> dict[str, Any]:
        kb = {"n": 3, "mean": mean, "ci95": ci}
        return {"test": test, "target": target, "kbps": kb, "speedup": sp}

    metrics = {
        "baseline": "a",
        "targets": [{"name": "a"}, {"name": "b"}],
        "matrix": [
            entry("a", "write", 100.0, 60.0, None), entry("b", "write", 49.0, 40.0, -0.51),
            entry("a", "read", 100.0, 70.0, None), entry("b", "read", 168.0, 50.0, 0.68),
        ],
    }  # fmt: skip
    (f,) = _speedup_findings(metrics)
    assert "-51%" in f.text and "+68%" in f.text and "inside the noise" in f.text, f.text
