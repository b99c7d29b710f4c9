"""The reference grid split across the session lab's hosts (docs/reference-grid.md, "Tiers
on several hosts"): the CE on host 1, the bridge and worker pool on host 2, each started
over SSH with the host's python, talking over the lab's links; the controller submits to
the CE at host 1's address."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import polars as pl
import yaml

from gridbench.hosts.inventory import load_inventory
from gridbench.jobflow.backends.reference import ReferenceBackend
from lab_fixtures import REPO, Lab
from test_runner import events, run_spec

#: the chain's server stamps, in the order a job passes them
CHAIN = ("ce_entry", "ce_submit", "bridge_entry", "bridge_submit", "bridge_done", "ce_done")


def _options(lab: Lab, inventory: Path | None = None) -> str:
    inv = inventory or lab.inventory
    return (
        f"{{preset: batched, inventory: {inv}, "
        f"hosts: {{ce: {lab.host(1).name}, bridge: {lab.host(2).name}}}}}"
    )


def _spec(lab: Lab, inventory: Path | None = None, ce: str | None = None) -> str:
    opts = _options(lab, inventory)
    if ce is not None:
        opts = opts.replace(f"ce: {lab.host(1).name}", f"ce: {ce}")
    h1, h2 = lab.host(1).name, lab.host(2).name
    return f"""
name: split-grid
backend: {{type: reference, options: {opts}}}
job: {{runtime: 0.2s}}
load: {{model: open, rate: 5/s}}
trial: {{jobs: 10}}
timeouts: {{status_interval: 0.1s, drain: 30s, settle: 10s}}
collectors: [{{type: edgi, poll: 0.5s}}]
sampling: {{hosts: [{h1}, {h2}], interval: 0.5s, inventory: {lab.inventory}}}
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gridbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "250", "PYTHONPATH": str(REPO / "src")},
    )


def _tier_pids(netns: str, marker: str) -> dict[str, int]:
    """The tiers (``--tier X``) running in ``netns`` whose command line has ``marker``."""
    r = subprocess.run(
        ["ip", "netns", "pids", netns], capture_output=True, text=True, check=True, timeout=10
    )
    out: dict[str, int] = {}
    for pid in r.stdout.split():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if "--tier" in words and any(marker in w for w in words):
            out[words[words.index("--tier") + 1]] = int(pid)
    return out


def test_tiers_run_on_their_hosts_and_stop(lab: Lab) -> None:
    ce, bridge = lab.host(1), lab.host(2)
    backend = ReferenceBackend.from_options(yaml.safe_load(_options(lab)))

    async def main() -> tuple[dict[str, int], dict[str, int], int]:
        await backend.open()
        try:
            assert backend._tmp is not None
            marker = str(backend._tmp)
            on_ce = _tier_pids(ce.netns or "", marker)
            on_bridge = _tier_pids(bridge.netns or "", marker)
            r = await backend.client.get("/health")
            return on_ce, on_bridge, r.status_code
        finally:
            await backend.close()

    on_ce, on_bridge, health = asyncio.run(main())
    assert health == 200
    # each tier runs inside its host's namespace, and listens on its host's address
    assert set(on_ce) == {"ce"} and set(on_bridge) == {"bridge"}
    assert urlsplit(backend.url).hostname == ce.address
    assert urlsplit(backend.bridge_url).hostname == bridge.address
    sources = dict(backend.report_sources())
    assert urlsplit(sources["bridge"]).hostname == bridge.address
    # closing the backend stops both (their stdin closes)
    for pid in [*on_ce.values(), *on_bridge.values()]:
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            asyncio.run(asyncio.sleep(0.05))
        assert not Path(f"/proc/{pid}").exists(), f"tier process {pid} outlived the backend"


def test_a_run_across_two_hosts_has_both_tiers_stamps_and_samples(lab: Lab, tmp_path: Path) -> None:
    out = run_spec(_spec(lab), tmp_path)
    assert out.status == "complete"
    ev = events(out)
    server = ev.filter(pl.col("stage").is_in(CHAIN))
    # every job passed every tier, in order (the bridge's stamps from host 2's reports)
    per_job = server.pivot(on="stage", index="job", values="t_ns", aggregate_function="min")
    assert per_job.height == 10
    assert per_job.select(CHAIN).null_count().sum_horizontal().item() == 0
    for a, b in itertools.pairwise(CHAIN):
        assert (per_job[a] <= per_job[b]).all(), f"{a} after {b}"
    samples = out.run.path / "samples"
    for k in (1, 2):
        f = samples / f"{lab.host(k).name}.jsonl"
        assert f.is_file() and f.stat().st_size > 0, f"no samples of {lab.host(k).name}"


def test_a_typo_in_a_tier_host_is_one_error_with_did_you_mean(lab: Lab, tmp_path: Path) -> None:
    typo = lab.host(1).name + "x"  # s1234ab-1x for s1234ab-1
    spec = tmp_path / "spec.yaml"
    spec.write_text(_spec(lab, ce=typo))
    r = _cli("validate", str(spec), cwd=tmp_path)
    assert r.returncode != 0
    text = r.stdout + r.stderr
    assert "Traceback" not in text
    assert text.count(f"no host {typo!r}") == 1, text
    assert f"did you mean {lab.host(1).name!r}" in text, text
    assert "backend.options.hosts.ce" in text, text


def test_a_tier_that_cannot_start_fails_with_its_log_tail(lab: Lab, tmp_path: Path) -> None:
    # host 2 without gridbench: its "python" says so on stderr and exits
    fake = tmp_path / "python-without-gridbench"
    said = "No module named gridbench (this host has none)"
    fake.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
    fake.chmod(0o755)
    inv = load_inventory(lab.inventory).model_dump()
    inv["hosts"][lab.host(2).name]["python"] = str(fake)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(inv))
    spec = tmp_path / "spec.yaml"
    spec.write_text(_spec(lab, inventory=inventory))
    r = _cli("run", str(spec), "--results", str(tmp_path / "results"), "-y", cwd=tmp_path)
    text = r.stdout + r.stderr
    assert r.returncode != 0, text
    assert "Traceback" not in text, text
    assert "bridge tier did not start" in text, text
    assert said in text, text
    # nothing of the split grid is left running on either host
    for k in (1, 2):
        assert _tier_pids(lab.host(k).netns or "", "gridbench.jobflow.reference") == {}


def test_split_tiers_on_loopback_finish_fail_and_cancel_across_the_link() -> None:
    """The two tiers as two servers (no lab): the CE's sequential status calls reach the
    bridge, a failure comes back with its message, a cancel is passed on to the bridge."""
    import time

    import httpx

    from gridbench.jobflow.reference import ReferenceGrid, build_config

    cfg = build_config("sequential", overrides={"status_update": {"per_job_cost_s": 0.01}})
    with (
        ReferenceGrid(cfg, tier="bridge") as bridge,
        ReferenceGrid(cfg, tier="ce", bridge_url=bridge.url) as ce,
        httpx.Client(base_url=ce.url, trust_env=False, timeout=10) as c,
    ):
        ok = c.post("/jobs", json={"name": "ok", "runtime_s": 0.1}).json()["id"]
        bad = c.post("/jobs", json={"name": "bad", "runtime_s": 0.1, "fail": True}).json()["id"]
        long = c.post("/jobs", json={"name": "long", "runtime_s": 60}).json()["id"]
        assert (
            httpx.post(f"{bridge.url}/jobs", json={"name": "x"}, trust_env=False).status_code == 409
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            st = c.post("/jobs/status", json={"ids": [ok, bad, long]}).json()["jobs"]
            states = (st[ok]["state"], st[bad]["state"], st[long]["state"])
            if states == ("done", "failed", "running"):
                break
            time.sleep(0.05)
        assert st[ok]["state"] == "done" and st[bad] == {
            "state": "failed",
            "message": "requested failure",
        }
        assert "finished on dg-" in c.get(f"/jobs/{ok}/output").text
        assert st[long]["state"] == "running"
        assert c.post("/jobs/cancel", json={"ids": [long]}).json() == {"cancelled": 1}
        for _ in range(100):  # the bridge frees the worker slot
            q = httpx.get(f"{bridge.url}/queue", trust_env=False).json()
            if q["workers"] == 0:
                break
            time.sleep(0.05)
        assert q["workers"] == 0 and c.get("/queue").json()["total"] == 0
