"""The command line: clear errors (never a traceback) and exit codes."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from conftest import BIN, cli_env

GOOD = """\
name: cli-good
backend: {type: noop, options: {runtime_s: 0.1}}
load: {model: open, rate: 20/s}
sweep: {rate: [10/s, 20/s]}
trial: {duration: 1s}
timeouts: {status_interval: 0.1s}
thresholds:
  - {metric: latency.overall.p99, op: "<", value: 30}
"""


def gb(*args: str, results: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=timeout
    )


def no_traceback(p: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in p.stderr + p.stdout


def test_validate_and_plan(tmp_path: Path) -> None:
    spec = tmp_path / "good.yaml"
    spec.write_text(GOOD)
    p = gb("validate", str(spec), results=tmp_path)
    assert p.returncode == 0 and "valid spec" in p.stdout
    p = gb("plan", str(spec), "--json", results=tmp_path)
    plan = json.loads(p.stdout)
    assert plan["total_jobs"] == 30 and plan["trials"] == ["p00-t00", "p01-t00"]
    p = gb("plan", str(spec), "--set", "trials=3", results=tmp_path)
    assert "2 points × 3 trials = 6 trials" in p.stdout and "nothing was submitted" in p.stdout
    assert not (tmp_path / "results").exists()  # a dry run writes nothing


def test_bad_specs_give_one_clear_error(tmp_path: Path) -> None:
    cases = {
        "typo.yaml": (GOOD.replace("rate: 20/s}", "rat: 20/s}"), "typo.yaml:3", "load.rat"),
        "yaml.yaml": ("name: [\n", "yaml.yaml:2", "not valid YAML"),
        "list.yaml": ("- a\n- b\n", "list.yaml", "must be a YAML mapping"),
        "cap.yaml": (GOOD + "safety: {max_rate: 1/s}\n", "safety.max_rate", "lower the rate"),
        "backend.yaml": (GOOD.replace("type: noop", "type: nosuch"), "backend.type", "use one of"),
        "opts.yaml": (GOOD.replace("runtime_s: 0.1", "runtme_s: 0.1"), "runtme_s", "docs/backends"),
    }
    for name, (text, where, what) in cases.items():
        spec = tmp_path / name
        spec.write_text(text)
        cmd = "run" if name in ("backend.yaml", "opts.yaml") else "validate"
        p = gb(cmd, str(spec), results=tmp_path / "r")
        no_traceback(p)
        assert p.returncode == 2, (name, p.stderr)
        assert where in p.stderr and what in p.stderr, (name, p.stderr)
    p = gb("validate", str(tmp_path / "missing.yaml"), results=tmp_path)
    assert p.returncode == 2 and "not found" in p.stderr


def test_run_analyze_list_show(tmp_path: Path) -> None:
    spec = tmp_path / "good.yaml"
    spec.write_text(GOOD)
    results = tmp_path / "results"
    p = gb("run", str(spec), results=results)
    no_traceback(p)
    assert p.returncode == 0, p.stderr
    run = next(results.iterdir())
    for f in ("experiment.json", "spec.yaml", "plan.json", "metrics.json", "report.html"):
        assert (run / f).exists(), f
    metrics = json.loads((run / "metrics.json").read_text())
    assert [t["passed"] for t in metrics["thresholds"]] == [True]
    p = gb("list", "--json", results=results)
    entries = json.loads(p.stdout)
    assert entries[0]["status"] == "complete" and entries[0]["verdict"].startswith("pass")
    # the table shows job flow's own column (trials done/planned), given by the family
    exp = json.loads((run / "experiment.json").read_text())
    p = gb("list", results=results)
    assert "trials" in p.stdout.splitlines()[1] + p.stdout.splitlines()[2], p.stdout
    assert f"{exp['trials_done']}/{exp['trials_planned']}" in p.stdout, p.stdout
    p = gb("show", "latest", results=results)
    assert p.returncode == 0 and "cli-good" in p.stdout
    # a failing threshold gives exit code 1, from a re-analysis too
    p = gb(
        "run",
        str(spec),
        "--set",
        "thresholds=[{metric: latency.overall.p99, op: '<', value: 0}]",
        results=results,
    )
    assert p.returncode == 1, p.stderr
    p = gb("analyze", "latest", "--json", results=results)
    assert p.returncode == 1
    assert json.loads(p.stdout)["thresholds"][0]["passed"] is False


def test_unreachable_backend(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = tmp_path / "down.yaml"
    spec.write_text(
        GOOD.replace(
            "{type: noop, options: {runtime_s: 0.1}}",
            f"{{type: reference, options: {{url: 'http://127.0.0.1:{port}'}}}}",
        )
    )
    p = gb("run", str(spec), results=tmp_path / "r")
    no_traceback(p)
    assert p.returncode == 3
    assert f"127.0.0.1:{port}" in p.stderr and "fix:" in p.stderr


def test_analyze_rejects_non_results(tmp_path: Path) -> None:
    p = gb("analyze", str(tmp_path), results=tmp_path / "r")
    no_traceback(p)
    assert p.returncode == 2 and "no results directory" in p.stderr


def test_sigterm_stops_cancels_and_finalises(tmp_path: Path) -> None:
    import signal
    import time

    from gridbench.jobflow.events.trial_log import read_trial_log

    spec = tmp_path / "long.yaml"
    spec.write_text(
        "name: sigterm\nbackend: {type: local, options: {slots: 8}}\n"
        "job: {command: [/bin/sleep, '60']}\nload: {model: open, rate: 5/s}\n"
        "trial: {duration: 60s}\ntrials: 2\ntimeouts: {status_interval: 0.2s}\n"
    )
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [str(BIN), "run", str(spec)],
        env=cli_env(results),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    events = None
    while time.monotonic() < deadline:
        events = next(results.glob("*/trials/p00-t00/events.arrows"), None)  # the default
        if events is not None and events.stat().st_size > 2000:
            break
        time.sleep(0.2)
    assert events is not None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    ev = read_trial_log(events.parent)
    acked = ev.filter(ev["stage"] == "submit_ack").height
    assert acked > 0 and ev.filter(ev["stage"] == "cancelled").height == acked
    run = events.parent.parent.parent
    exp = json.loads((run / "experiment.json").read_text())
    assert exp["status"] == "aborted" and exp["trials_done"] == 1
    assert (run / "metrics.json").exists()  # what was recorded was analysed


def test_check_reports_each_step(tmp_path: Path) -> None:
    spec = tmp_path / "good.yaml"
    spec.write_text(GOOD.replace("{type: noop, options: {runtime_s: 0.1}}",
                                 "{type: reference, options: {preset: batched}}")
                    + "collectors: [{type: edgi}]\n")  # fmt: skip
    p = gb("check", str(spec), results=tmp_path)
    no_traceback(p)
    assert p.returncode == 0, p.stdout
    for step in ("backend options", "connect", "submit one job", "collectors"):
        assert step in p.stdout
    assert "FAILED" not in p.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("{type: noop, options: {runtime_s: 0.1}}",
                                "{type: local}").replace("rate: 20/s}", "rate: 20/s}\njob: "
                                "{command: [/nonexistent/binary]}"))  # fmt: skip
    p = gb("check", str(bad), results=tmp_path)
    no_traceback(p)
    assert p.returncode == 3 and "FAILED" in p.stdout and "ended failed" in p.stdout


def test_list_of_no_runs_is_a_sentence_not_an_empty_table(tmp_path: Path) -> None:
    p = gb("list", results=tmp_path / "not-yet")
    no_traceback(p)
    assert p.returncode == 0 and "the folder does not exist yet" in p.stdout, p.stdout
    assert "┏" not in p.stdout  # no table
    (tmp_path / "empty").mkdir()
    p = gb("list", results=tmp_path / "empty")
    assert p.returncode == 0 and "no runs in" in p.stdout and "does not exist" not in p.stdout
    p = gb("list", "--json", results=tmp_path / "empty")
    assert p.returncode == 0 and json.loads(p.stdout) == []
