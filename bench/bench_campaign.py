"""Benchmark: a campaign's own cost, and its dashboard page.

1. **Overhead per unit.** A campaign of N job-flow units (the embedded reference grid,
   2 s trials) is run as a user runs it (``gridbench campaign run``, a whole process).
   Each unit's own run is its family's command, timed by the campaign's log (``t`` of its
   start and end: the process, its start-up included, as ``gridbench run`` by hand costs
   it). The campaign's own cost is the rest: checking and estimating the units (their
   families' plans, at once), the bookkeeping between units, the documents at the end;
   the campaign command's own start-up (``gridbench --version``, measured beside it) is
   shown apart, paid once per campaign like any command's. Target: ≤ 1 s a unit.
2. **The campaign page of 200 units** (``/campaigns/<id>``), served by ``gridbench
   serve`` over loopback: median of 20 loads after one warm-up. Target: < 200 ms.

Run:

    .venv/bin/python bench/bench_campaign.py [--units 4] [--page-units 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

BIN = Path(sys.executable).with_name("gridbench")
SPEC = """\
name: bench-unit
backend: {type: reference, options: {preset: batched}}
job: {runtime: 0.2s}
load: {model: open, rate: 2/s}
trial: {duration: 2s}
timeouts: {status_interval: 0.2s}
"""


def campaign_text(n: int) -> str:
    units = "\n".join(
        f"      - {{id: u{i:03d}, spec: unit.yaml, set: [name=bench-unit-{i:03d}]}}"
        for i in range(n)
    )
    return f"name: bench-campaign\ncomponents:\n  - id: aem\n    units:\n{units}\n"


def env(results: Path) -> dict[str, str]:
    e = dict(os.environ)
    e["GRIDBENCH_RESULTS"] = str(results)
    return e


def overhead(tmp: Path, n: int) -> dict[str, float]:
    (tmp / "unit.yaml").write_text(SPEC, encoding="utf-8")
    camp = tmp / "campaign.yaml"
    camp.write_text(campaign_text(n), encoding="utf-8")
    results = tmp / "results"
    starts = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([str(BIN), "--version"], capture_output=True, check=True)
        starts.append(time.perf_counter() - t)
    t0 = time.time()
    p = subprocess.run(
        [str(BIN), "campaign", "run", str(camp)], env=env(results), capture_output=True, text=True
    )
    total = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"campaign run exited {p.returncode}:\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    [folder] = list((results / "campaigns").iterdir())
    events = [json.loads(x) for x in (folder / "log.jsonl").read_text().splitlines() if x]
    start = {(e["unit"], e["attempt"]): e["t"] for e in events if e["event"] == "start"}
    end = {(e["unit"], e["attempt"]): e["t"] for e in events if e["event"] == "end"}
    units = sum(end[k] - start[k] for k in start)
    first = min(start.values()) - t0
    last = t0 + total - max(end.values())
    startup = min(starts)
    own = total - units
    return {
        "units": n,
        "total_s": total,
        "in_units_s": units,
        "before_first_unit_s": first,
        "after_last_unit_s": last,
        "cli_startup_s": startup,
        "overhead_per_unit_s": own / n,
        "overhead_per_unit_without_cli_start_s": (own - startup) / n,
    }


def synthetic(root: Path, n: int, tmp: Path) -> str:
    """A finished campaign of ``n`` units (no run behind them: the page reads none)."""
    from gridbench.campaign.documents import write_documents
    from gridbench.campaign.folder import CampaignDir
    from gridbench.campaign.model import parse_campaign, resolve_units
    from gridbench.campaign.run_plan import Plan
    from gridbench.campaign.runner import CampaignRunner

    (tmp / "unit.yaml").write_text(SPEC, encoding="utf-8")
    text = campaign_text(n)
    parsed = parse_campaign(text, str(tmp / "campaign.yaml"), tmp)
    units = resolve_units(parsed)
    runner = CampaignRunner(parsed, Plan(units, {c.id: c for c in parsed.spec.components}), root)
    folder: CampaignDir = runner.open()
    for u in units:
        runner.records[u.key] = {"key": u.key, "family": "jobflow", "title": u.key}
    runner.record_event("begin")
    for i, u in enumerate(units):
        runner.record_event(
            "start", unit=u.key, rep=1, attempt=1, command="gridbench run unit.yaml"
        )
        outcome = "error" if i % 50 == 7 else "passed"
        runner.record_event(
            "end",
            unit=u.key,
            rep=1,
            attempt=1,
            exit=0,
            outcome=outcome,
            reasons=["made up"] if outcome == "error" else [],
        )
    runner.record_event("finish", status="complete")
    write_documents(folder, compare=False)
    return folder.id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def page(tmp: Path, n: int) -> dict[str, float]:
    root = tmp / "page-results"
    cid = synthetic(root, n, tmp)
    port = free_port()
    server = subprocess.Popen(
        [str(BIN), "serve", "--port", str(port), "--results", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        end = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/static/dashboard.css", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > end:
                    sys.exit("gridbench serve did not answer")
                time.sleep(0.2)
        with httpx.Client(base_url=url, timeout=30) as c:
            r = c.get(f"/campaigns/{cid}")
            assert r.status_code == 200 and r.text.count("data-unit=") == n, r.status_code
            times, floor = [], []
            for _ in range(20):
                t = time.perf_counter()
                c.get(f"/campaigns/{cid}")
                times.append(time.perf_counter() - t)
                t = time.perf_counter()
                c.get("/static/dashboard.css")
                floor.append(time.perf_counter() - t)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {
        "page_units": n,
        "page_median_ms": statistics.median(times) * 1000,
        "page_max_ms": max(times) * 1000,
        "static_file_median_ms": statistics.median(floor) * 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=4)
    ap.add_argument("--page-units", type=int, default=200)
    ap.add_argument("--keep", type=Path, help="keep the results under this folder")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-campaign-"))
    try:
        out = overhead(tmp, args.units)
        out.update(page(tmp, args.page_units))
        for k, v in out.items():
            print(f"{k:45s} {v:10.3f}" if isinstance(v, float) else f"{k:45s} {v:10d}")
        ok = out["overhead_per_unit_s"] <= 1.0 and out["page_median_ms"] < 200
        print(
            "targets:",
            "met" if ok else "NOT met",
            "(overhead ≤ 1 s a unit, campaign page of 200 units < 200 ms)",
        )
    finally:
        if args.keep:
            shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
