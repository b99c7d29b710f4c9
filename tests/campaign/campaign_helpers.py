"""What the campaign tests share: unit specs of three families that run in a few seconds
(job flow on the embedded reference grid, storage's POSIX conformance on two local
directories, messaging on loopback) and the CLI."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import BIN, cli_env

JOBFLOW = """\
name: {name}
backend: {{type: reference, options: {{preset: {preset}}}}}
job: {{runtime: 0.2s}}
load: {{model: open, rate: {rate}}}
trials: {trials}
trial: {{duration: {duration}}}
timeouts: {{status_interval: 0.2s}}
"""
IO = """\
name: {name}
targets:
  - {{name: disk, path: {a}}}
  - {{name: tmpfs, path: {b}}}
baseline: disk
repetitions: 1
iozone: {{enabled: false}}
conformance: {{enabled: true, syscalls: [chmod, mkdir], timeout: 60s}}
"""
NET = """\
name: {name}
environments: [host]
pingpong: {{transports: [tcp], sizes: {{list: [1k, 4k]}}, tests: 5, round_trips: 5}}
echo: {{enabled: false}}
burst: {{enabled: false}}
transfer: {{enabled: false}}
floor: {{sockperf: false, iperf3: false}}
"""


def jobflow_spec(
    folder: Path,
    file: str = "jobflow.yaml",
    *,
    name: str = "cmp-jf",
    preset: str = "batched",
    rate: str = "2/s",
    trials: int = 1,
    duration: str = "2s",
) -> Path:
    p = folder / file
    p.write_text(
        JOBFLOW.format(name=name, preset=preset, rate=rate, trials=trials, duration=duration),
        encoding="utf-8",
    )
    return p


def io_spec(
    folder: Path, targets: tuple[Path, Path], file: str = "storage.yaml", *, name: str = "cmp-io"
) -> Path:
    """Storage's POSIX conformance on a local directory against tmpfs (``targets``: two
    folders other users can search, :func:`io_targets`)."""
    p = folder / file
    p.write_text(IO.format(name=name, a=targets[0], b=targets[1]), encoding="utf-8")
    return p


@contextmanager
def io_targets() -> Iterator[tuple[Path, Path]]:
    """A directory under /tmp and one on tmpfs, searchable by the users pjdfstest
    switches to (pytest's own folders are 0700)."""
    a = Path(tempfile.mkdtemp(prefix="gb-cmp-", dir="/tmp"))
    b = Path(tempfile.mkdtemp(prefix="gb-cmp-", dir="/dev/shm"))
    try:
        for d in (a, b):
            d.chmod(0o755)
        yield a, b
    finally:
        shutil.rmtree(a, ignore_errors=True)
        shutil.rmtree(b, ignore_errors=True)


def net_spec(folder: Path, file: str = "messaging.yaml", *, name: str = "cmp-net") -> Path:
    p = folder / file
    p.write_text(NET.format(name=name), encoding="utf-8")
    return p


def gb(results: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args],
        env=cli_env(results),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def campaign_dirs(results: Path) -> list[Path]:
    base = results / "campaigns"
    return sorted(p for p in base.iterdir() if (p / "campaign.json").is_file())


def summary(campaign: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((campaign / "docs" / "summary.json").read_text())
    return data


def events(campaign: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (campaign / "log.jsonl").read_text().splitlines() if x]


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file of a folder by its path, with its content's hash and mode."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            h = hashlib.sha256(p.read_bytes()).hexdigest()
            out[str(p.relative_to(folder))] = f"{h} {p.stat().st_mode:o} {p.stat().st_mtime_ns}"
    return out


def synthetic_campaign(root: Path, tmp: Path, n: int, *, finish: bool = True) -> Path:
    """A campaign folder of ``n`` job-flow units recorded as a campaign records them,
    with no run behind them (what the dashboard's page reads is the campaign's own)."""
    from gridbench.campaign.documents import write_documents
    from gridbench.campaign.model import parse_campaign, resolve_units
    from gridbench.campaign.run_plan import Plan
    from gridbench.campaign.runner import CampaignRunner

    jobflow_spec(tmp, "unit.yaml")
    units_text = "\n".join(
        f"      - {{id: u{i:03d}, spec: unit.yaml, set: [name=page-{i:03d}]}}" for i in range(n)
    )
    text = f"name: page\ncomponents:\n  - id: aem\n    units:\n{units_text}\n"
    parsed = parse_campaign(text, str(tmp / "campaign.yaml"), tmp)
    units = resolve_units(parsed)
    runner = CampaignRunner(parsed, Plan(units, {c.id: c for c in parsed.spec.components}), root)
    folder = runner.open()
    for u in units:
        runner.records[u.key] = {"key": u.key, "family": "jobflow", "title": f"unit {u.key}"}
    runner.record_event("begin")
    for i, u in enumerate(units):
        runner.record_event(
            "start", unit=u.key, rep=1, attempt=1, command="gridbench run unit.yaml"
        )
        if not finish and i == n - 1:
            runner.running = []  # the last one runs on
            break
        outcome = "error" if i == 1 else "passed"
        reasons = ["<b>made up</b>"] if outcome == "error" else []
        runner.record_event(
            "end", unit=u.key, rep=1, attempt=1, exit=0, outcome=outcome, run=None, reasons=reasons
        )
    if finish:
        runner.record_event("finish", status="complete", outcome="complete")
        runner.folder.write_state(runner._state_doc("complete"))  # type: ignore[union-attr]
        write_documents(folder, compare=False)
    return folder.path
