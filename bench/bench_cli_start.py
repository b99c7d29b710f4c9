"""How fast the command line answers (issue 42): each command run as a whole process, as a
user's shell (and the test suite, at each of its CLI calls) runs it, best of ``--repeat``,
beside ``python -c pass`` with the same interpreter in the same run.

Prints one row per command: the best wall time, the CPU time (user + system) of that
same process (what the command costs the machine, which a loaded machine's wall time
hides), how many modules it imported, and the issue's target:

- ``gridbench --version``                                   ≤ 0.2 s
- ``gridbench --help``, ``gridbench io --help``             ≤ 0.3 s
- ``gridbench validate examples/local-sleep-ramp.yaml``     ≤ 0.5 s
- ``gridbench list`` of a store of 1,000 runs               ≤ 0.5 s

The store is made here (``--runs`` runs of three families, each an experiment.json as
gridbench writes it, in a temporary folder); ``list`` is timed with the store's index
(``ROOT/.index.json``, made by the first list) and without it (removed before each run:
every record read, the index made again).

    .venv/bin/python bench/bench_cli_start.py [--repeat 5] [--runs 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRIDBENCH = Path(sys.executable).with_name("gridbench")


def make_store(root: Path, runs: int) -> None:
    """``runs`` run folders of job flow, io and study, newest last."""
    for i in range(runs):
        run = root / f"2026{i // 28 % 12 + 1:02d}{i % 28 + 1:02d}T{i % 24:02d}0000Z-run-{i}"
        run.mkdir(parents=True)
        exp: dict[str, object] = {
            "id": run.name,
            "name": f"run-{i}",
            "status": "complete",
            "created": f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
            "verdict": "pass" if i % 5 else "fail",
            "spec_hash": f"{i:016x}",
            "started": "2026-01-01T00:00:00+00:00",
            "ended": "2026-01-01T00:05:00+00:00",
            "runner": {"pid": 1000 + i, "create_time": 1.7e9},
            "analysed": True,
        }
        if i % 3 == 0:
            exp |= {"backend": "local", "load_model": "open", "trials_done": 3, "trials_planned": 3}
        elif i % 3 == 1:
            exp |= {"kind": "io", "targets": [{"name": "a"}, {"name": "b"}], "baseline": "a"}
        else:
            exp |= {"kind": "study", "tools": ["workbench", "scripts"], "delivery": "import"}
        (run / "experiment.json").write_text(json.dumps(exp, indent=1))


def timed(argv: list[str], env: dict[str, str], before: Callable[[], None]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv`` as a process of its own."""
    before()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def modules_of(argv: list[str], env: dict[str, str]) -> int:
    """How many modules the command imported (its own process, ``-X importtime``)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return sum(1 for line in p.stderr.splitlines() if line.startswith("import time:")) - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each command (best is shown)")
    ap.add_argument("--runs", type=int, default=1000, help="runs in the listed store")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        store = tmp / "results"
        make_store(store, a.runs)
        env = dict(os.environ, GRIDBENCH_RESULTS=str(store), COLUMNS="120")
        index = store / ".index.json"
        nothing: Callable[[], None] = lambda: None  # noqa: E731
        drop_index: Callable[[], None] = lambda: index.unlink(missing_ok=True)  # noqa: E731
        gb, spec = str(GRIDBENCH), str(ROOT / "examples" / "local-sleep-ramp.yaml")
        rows: list[tuple[str, list[str], Callable[[], None], float | None]] = [
            ("python -c pass", [sys.executable, "-c", "pass"], nothing, None),
            ("gridbench --version", [gb, "--version"], nothing, 0.2),
            ("gridbench --help", [gb, "--help"], nothing, 0.3),
            ("gridbench io --help", [gb, "io", "--help"], nothing, 0.3),
            (
                "gridbench validate examples/local-sleep-ramp.yaml",
                [gb, "validate", spec],
                nothing,
                0.5,
            ),
            (f"gridbench list ({a.runs:,} runs, with the index)", [gb, "list"], nothing, 0.5),
            (
                f"gridbench list ({a.runs:,} runs, no index: made again)",
                [gb, "list"],
                drop_index,
                None,
            ),
        ]
        subprocess.run([gb, "list"], env=env, stdout=subprocess.DEVNULL, check=True)  # the index
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load "
            f"{os.getloadavg()[0]:.2f}; best of {a.repeat} (wall s, and that run's CPU s)"
        )
        print(f"{'command':58s} {'wall s':>7s} {'cpu s':>7s} {'modules':>8s}  target")
        for label, argv, before, target in rows:
            runs = [timed(argv, env, before) for _ in range(a.repeat)]
            wall, cpu = min(runs)
            before()
            mods = modules_of(
                ["-m", "gridbench.cli", *argv[1:]] if argv[0] == gb else argv[1:], env
            )
            goal = "" if target is None else f"≤ {target} s " + ("ok" if wall <= target else "OVER")
            print(f"{label:58s} {wall:7.3f} {cpu:7.3f} {mods:8d}  {goal}")
        index.unlink(missing_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
