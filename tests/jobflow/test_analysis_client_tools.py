"""A client heavier than the service (UNICORE's UCC) makes the trial invalid."""

from __future__ import annotations

from pathlib import Path

from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.analysis.info import TrialInfo
from gridbench.jobflow.analysis.validity import _client_tools_share
from gridbench.jobflow.events.chain import Stage, StageChain
from test_runner import run_spec

CHAIN = StageChain((Stage("submit", "client"), Stage("client_done", "client"))).to_dict()


def info(cpu_s: float | None) -> TrialInfo:
    d = {"trial_id": "t", "chain": CHAIN, "started_ns": 0, "ended_ns": 10_000_000_000,
         "cpu_count": 4}  # fmt: skip
    if cpu_s is not None:
        d["client_processes"] = {"cpu_s": cpu_s, "calls": 100}
    return TrialInfo.from_dict(d)


def test_share_of_the_whole_machine() -> None:
    assert _client_tools_share(info(None)) is None
    assert _client_tools_share(info(20.0)) == 0.5  # 20 CPU-s over 10 s × 4 cores
    assert _client_tools_share(info(38.0)) == 0.95


def test_heavy_client_tools_invalidate_a_real_run(tmp_path: Path) -> None:
    """Each client call burns CPU (like a JVM per command): the verdict must say so.
    Up to 16 calls burn at once, so the tools hold most of the machine even while other
    tests' processes want it too (8 at once held 45-47% of it under a loaded suite)."""
    out = run_spec(
        f"""
name: heavy-client
backend:
  type: command
  options:
    preset: demo
    vars: {{state_dir: "{tmp_path / "demo"}", client_args: [--burn, "0.4"]}}
job: {{command: [/bin/true]}}
load: {{model: open, rate: 20/s, pool: 16}}
trial: {{duration: 2s}}
timeouts: {{status_interval: 0.2s, drain: 30s}}
""",
        tmp_path,
    )
    metrics = analyze_run(out.run.path)
    v = metrics["points"][0]["trials"][0]["validity"]
    assert v["client_tools_cpu_share"] is not None and v["client_tools_cpu_share"] > 0.5
    assert v["client_bound"] is True and v["valid"] is False
    assert any("client tools were the bottleneck" in r for r in v["reasons"])
