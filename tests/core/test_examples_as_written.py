"""Every example in ``examples/`` runs in the suite exactly as its header says a user runs
it: from the repository root, with the default (relative) results folder, through the
public command. Each ``#   gridbench ...`` line of an example's header is run as written
(``mkdir -p ... &&`` before it too), except a line marked ``# long:`` (a full campaign; the
same example's quick line runs instead) and ``serve`` (interactive, tested by the study's
browser tests). A run must exit 0, then re-analyse and report cleanly.

An example that needs hosts makes them itself as a user would: its line starts with
``gridbench lab up --name NAME`` and ends with ``gridbench lab down --name NAME`` (a lab on
this machine, docs/hosts.md; its spec names ``/run/gridbench-lab/NAME/inventory.yaml``).
Should a command in between fail, the lab is still taken down here (:func:`labs_made`).

An example that needs what this machine does not have names it in :data:`NEEDS`; it is
still validated and planned by tests/core/test_examples.py, test_io_examples.py and
test_net_run.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import BIN
from gridbench.hosts.lab.book import STATE_ROOT

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RESULTS = ROOT / "results"  # the default results folder, as a user at the root has it

#: Examples that cannot run as written on a test machine, and why.
NEEDS = {
    "edgi-site.yaml": "a grid serving EDGI reports on port 8750 for a ten-hour campaign",
    "io-seed-nfs.yaml": "the candidate and native NFS mounts under /mnt",
    "io-resilience-gluster.yaml": "a GlusterFS replica-3 volume mounted on /mnt/gv0",
    "slurm-paths-users.yaml": "a Slurm site with the users alice and bob and their JWTs",
}


def commands(example: Path) -> list[list[list[str]]]:
    """The header's command lines, each as its ``&&``-joined argv lists."""
    header: list[str] = []
    for line in example.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line[1:].strip())
    joined = re.sub(r"\\\s*\n\s*", " ", "\n".join(header))  # continuation lines
    out = []
    for line in joined.splitlines():
        if "gridbench " not in line or not re.match(r"^(mkdir|gridbench) ", line):
            continue
        line, _, note = line.partition("#")
        if note.strip().startswith("long") or " serve " in f" {line} ":
            continue
        out.append([shlex.split(part) for part in line.split("&&")])
    return out


CASES = [
    pytest.param(p.name, i, argvs, id=f"{p.stem}-{i}")
    for p in sorted(EXAMPLES.glob("*.yaml"))
    if p.name not in NEEDS
    for i, argvs in enumerate(commands(p))
]


def test_every_runnable_example_has_a_command_the_suite_runs() -> None:
    names = {p.name for p in EXAMPLES.glob("*.yaml")}
    ran = {case.values[0] for case in CASES}
    assert names - set(NEEDS) == ran, sorted(names - set(NEEDS) - ran)
    assert set(NEEDS) <= names  # no stale entry


def labs_made(argvs: list[list[str]]) -> list[str]:
    """The labs the commands bring up (``gridbench lab up ... --name NAME``)."""
    return [
        argv[argv.index("--name") + 1]
        for argv in argvs
        if argv[:3] == ["gridbench", "lab", "up"] and "--name" in argv[:-1]
    ]


def run_dirs() -> set[Path]:
    return {p for p in RESULTS.iterdir() if p.is_dir()} if RESULTS.is_dir() else set()


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k != "GRIDBENCH_RESULTS"}
    e["PATH"] = f"{BIN.parent}{os.pathsep}{e.get('PATH', '')}"  # bare 'gridbench', as written
    e["COLUMNS"] = "120"
    return e


@pytest.mark.parametrize(("name", "index", "argvs"), CASES)
def test_the_example_runs_as_written(name: str, index: int, argvs: list[list[str]]) -> None:
    before = run_dirs()
    try:
        for argv in argvs:
            p = subprocess.run(
                argv, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=900
            )
            out = p.stdout + p.stderr
            assert p.returncode == 0, f"{shlex.join(argv)} exited {p.returncode}:\n{out[-4000:]}"
            assert "Traceback" not in out and "internal error" not in out, out[-4000:]
    finally:
        for lab in labs_made(argvs):  # a command after 'lab up' failed: the lab still goes
            if (STATE_ROOT / lab).exists():
                subprocess.run(
                    [str(BIN), "lab", "down", "--name", lab],
                    cwd=ROOT,
                    env=env(),
                    capture_output=True,
                    timeout=300,
                )
    for lab in labs_made(argvs):
        assert not (STATE_ROOT / lab).exists(), f"the example left its lab {lab}"
    new = run_dirs() - before - {RESULTS / "campaigns"}
    campaign = any(argv[:3] == ["gridbench", "campaign", "run"] for argv in argvs)
    if campaign:  # a run folder per unit, linked from the campaign's folder
        done = sorted((RESULTS / "campaigns").glob("*/docs/index.html"))
        assert done, "the campaign wrote no documents"
        links = {p.resolve() for p in (done[-1].parents[1] / "runs").iterdir()}
        assert {r.resolve() for r in new} <= links, (new, links)
    else:
        assert len(new) <= 1, new
    for run in new:  # re-analysed and reported by the generic commands, cleanly
        for verb in ("analyze", "report"):
            p = subprocess.run(
                [str(BIN), verb, str(run.relative_to(ROOT))],
                cwd=ROOT,
                env=env(),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert p.returncode == 0, f"gridbench {verb} {run}:\n{(p.stdout + p.stderr)[-4000:]}"
        assert (run / "report.html").is_file() and (run / "metrics.json").is_file()
