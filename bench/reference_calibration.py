"""Calibrate the reference grid: drive it directly at a ramp of open-loop rates.

For each status-update policy (sequential = the default, batched) this starts the grid
in-process, submits jobs at fixed intervals for ``--duration`` seconds per rate, waits
for all of them to finish, and afterwards reads the grid's EDGI XML monitoring reports.
It prints, per rate:

  offered      offered rate (jobs/s)
  n            jobs submitted
  thr_T7       achieved throughput at T7: count / (last T7 - first T2)
  r_T5 r_T6 r_T7  EDGI average throughput / offered at bridge_submit, bridge_done and
               ce_done (METHODS 1.3: P_n = n / (t_n - min T2), mean over n > 15 %)
  fin_lat      mean CE finishing latency T7 - T6 (s); p_lat: mean T7 - T2 (s)
  s_T6 s_T7    steady throughput / offered: slope of the cumulative count of T6 / T7
               over the submission window after 15 % warm-up
  maxfin       max jobs between T6 and T7 (the finishing queue)
  maxlist      max jobs in the CE's status list (T3..T7) and its growth during
               submission (jobs/s, least-squares slope; ~0 when the CE keeps up)

Usage: .venv/bin/python bench/reference_calibration.py [--rates 1,2,3,4,5] [--duration 12]
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from defusedxml import ElementTree

from gridbench.jobflow.reference import ReferenceGrid, build_config


@dataclass
class Trial:
    rate: float
    ids: list[str] = field(default_factory=list)
    start_ns: int = 0
    submit_end_ns: int = 0
    rejected: int = 0


async def run_trial(client: httpx.AsyncClient, rate: float, duration: float, drain: float) -> Trial:
    """Open loop: submission k starts at start + k/rate whatever the previous ones do."""
    trial = Trial(rate)
    n = round(rate * duration)
    loop = asyncio.get_running_loop()
    t0 = loop.time() + 0.05
    trial.start_ns = time.time_ns()

    async def submit(k: int) -> None:
        r = await client.post("/jobs", json={"name": f"r{rate:g}-{k}", "runtime_s": None})
        if r.status_code == 201:
            trial.ids.append(r.json()["id"])
        else:
            trial.rejected += 1

    tasks = []
    for k in range(n):
        await asyncio.sleep(max(0.0, t0 + k / rate - loop.time()))
        tasks.append(asyncio.create_task(submit(k)))
    await asyncio.gather(*tasks)
    trial.submit_end_ns = time.time_ns()
    deadline = loop.time() + drain
    while loop.time() < deadline:
        r = await client.post("/jobs/status", json={"ids": trial.ids})
        states = [v["state"] for v in r.json()["jobs"].values()]
        if all(s in ("done", "failed", "cancelled") for s in states):
            break
        await asyncio.sleep(0.5)
    return trial


def _t_ns(dt: str) -> int:
    base, _, ms = dt.partition(".")
    sec = calendar.timegm(time.strptime(base, "%Y-%m-%d %H:%M:%S"))
    return sec * 1_000_000_000 + int(ms or 0) * 1_000_000


def read_reports(directory: Path) -> dict[str, dict[str, int]]:
    """Per CE id: {"T2".."T7": t_ns}, joined through job_id_bridge."""
    ce: dict[str, dict[str, int]] = {}
    bridge: dict[str, dict[str, int]] = {}
    to_bridge: dict[str, str] = {}
    for tier, store in (("ce", ce), ("bridge", bridge)):
        first, second, last = ("T2", "T3", "T7") if tier == "ce" else ("T4", "T5", "T6")
        for path in sorted((directory / tier).glob("*.xml")):
            root = ElementTree.fromstring(path.read_bytes())
            for md in root.iter("metric_data"):
                jid, ev = md.findtext("job_id", ""), md.findtext("event", "")
                t = _t_ns(md.findtext("dt", ""))
                rec = store.setdefault(jid, {})
                if ev == "job_entry":
                    rec[first] = t
                elif ev == "job_submission":
                    rec[second] = t
                    if tier == "ce":
                        to_bridge[jid] = md.findtext("job_id_bridge", "")
                elif md.findtext("status") in ("Finished", "Failed"):
                    rec[last] = t
    for cid, rec in ce.items():
        rec.update(bridge.get(to_bridge.get(cid, ""), {}))
    return ce


def edgi_ratio(t: np.ndarray, t0: int, offered: float) -> float:
    """EDGI average throughput (15 % warm-up dropped) divided by the offered rate."""
    ts = np.sort(t)
    n = np.arange(1, len(ts) + 1)
    p = n / ((ts - t0) / 1e9)
    k = int(np.floor(0.15 * len(ts)))
    return float(np.mean(p[k:]) / offered)


def max_in_between(start: np.ndarray, end: np.ndarray) -> int:
    """Max number of jobs with start <= t < end."""
    ev = np.concatenate([start, end])
    delta = np.concatenate([np.ones(len(start)), -np.ones(len(end))])
    order = np.lexsort((delta, ev))  # ends before starts at equal times
    return int(np.max(np.cumsum(delta[order])))


def growth(start: np.ndarray, end: np.ndarray, t_a: int, t_b: int) -> float:
    """Slope (jobs/s) of the in-between count sampled over [t_a, t_b]."""
    grid = np.linspace(t_a, t_b, 50)
    counts = np.array([np.sum((start <= g) & (end > g)) for g in grid])
    return float(np.polyfit((grid - t_a) / 1e9, counts, 1)[0])


def steady_ratio(t: np.ndarray, t_a: int, t_b: int, offered: float) -> float:
    """Slope of the cumulative passage count over the submission window, after 15 % warm-up,
    divided by the offered rate (~1 when the stage keeps up)."""
    a = t_a + 0.15 * (t_b - t_a)
    grid = np.linspace(a, t_b, 50)
    counts = np.searchsorted(np.sort(t), grid, side="right")
    return float(np.polyfit((grid - a) / 1e9, counts, 1)[0] / offered)


def summarize(trial: Trial, times: dict[str, dict[str, int]]) -> str:
    need = ("T2", "T3", "T5", "T6", "T7")
    recs = [times[i] for i in trial.ids if all(k in times.get(i, {}) for k in need)]
    if not recs:
        return f"{trial.rate:7.1f}  (no complete jobs)"
    col = {k: np.array([r[k] for r in recs], dtype=np.int64) for k in need}
    t0 = int(col["T2"].min())
    thr = len(recs) / ((col["T7"].max() - t0) / 1e9)
    fin = float(np.mean(col["T7"] - col["T6"]) / 1e9)
    lat = float(np.mean(col["T7"] - col["T2"]) / 1e9)
    maxfin = max_in_between(col["T6"], col["T7"])
    maxlist = max_in_between(col["T3"], col["T7"])
    g = growth(col["T3"], col["T7"], trial.start_ns, trial.submit_end_ns)
    r5, r6, r7 = (edgi_ratio(col[k], t0, trial.rate) for k in ("T5", "T6", "T7"))
    s6, s7 = (
        steady_ratio(col[k], trial.start_ns, trial.submit_end_ns, trial.rate) for k in ("T6", "T7")
    )
    return (
        f"{trial.rate:7.1f} {len(recs):4d} {thr:7.2f} {r5:6.2f} {r6:6.2f} {r7:6.2f} "
        f"{s6:6.2f} {s7:6.2f} "
        f"{fin:8.2f} {lat:7.2f} {maxfin:7d} {maxlist:8d} {g:+7.2f} {trial.rejected:4d}"
    )


async def drive(url: str, rates: list[float], duration: float, drain: float) -> list[Trial]:
    async with httpx.AsyncClient(base_url=url, timeout=30.0) as client:
        return [await run_trial(client, r, duration, drain) for r in rates]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rates", default="1,2,3,4,5", help="offered rates, jobs/s")
    ap.add_argument("--duration", type=float, default=12.0, help="submission seconds per rate")
    ap.add_argument("--drain", type=float, default=120.0, help="max wait for completion")
    ap.add_argument("--policies", default="sequential,batched")
    ap.add_argument("--cost", type=float, help="override status_update.per_job_cost_s")
    ap.add_argument("--interval", type=float, help="override status_update.interval_s")
    args = ap.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]
    for policy in args.policies.split(","):
        with tempfile.TemporaryDirectory(prefix="gridbench-calib-") as tmp:
            over: dict[str, Any] = {"reports": {"dir": tmp, "rotate_s": 2.0}}
            su_over = {"per_job_cost_s": args.cost, "interval_s": args.interval}
            over["status_update"] = {k: v for k, v in su_over.items() if v is not None}
            cfg = build_config(policy, overrides=over)
            su = cfg.status_update
            print(
                f"\npolicy={policy}  per_job_cost_s={su.per_job_cost_s}  interval_s={su.interval_s}"
                f"  runtime~{cfg.workers.runtime.mean}s  duration={args.duration}s per rate"
            )
            t_start = time.monotonic()
            grid = ReferenceGrid(cfg)
            url = grid.start_background()
            try:
                trials = asyncio.run(drive(url, rates, args.duration, args.drain))
            finally:
                grid.stop()  # closes the current report files
            times = read_reports(Path(tmp))
            print(
                "offered    n  thr_T7   r_T5   r_T6   r_T7   s_T6   s_T7  fin_lat   p_lat  maxfin"
                "  maxlist  growth  rej"
            )
            for trial in trials:
                print(summarize(trial, times))
            print(f"wall time {time.monotonic() - t_start:.0f} s")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
