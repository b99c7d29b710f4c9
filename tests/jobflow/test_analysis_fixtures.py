"""Builders for analysis tests: event frames, the EDGI chain, simulated trials, run dirs.

(No tests here; the other test_analysis_* modules import it.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gridbench.jobflow.analysis.info import TrialInfo
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.model import EVENT_SCHEMA

T0 = 1_700_000_000_000_000_000  # an epoch in ns; tests express times in seconds after it
NS = 1_000_000_000

EDGI_STAGES = (
    "submit",
    "ce_entry",
    "ce_submit",
    "bridge_entry",
    "bridge_submit",
    "bridge_done",
    "ce_done",
    "client_done",
)


def edgi_chain() -> StageChain:
    src = {"submit": "client", "client_done": "client"}
    return StageChain(
        stages=tuple(Stage(s, src.get(s, "ce"), precision_ns=1_000) for s in EDGI_STAGES),
        segments=(
            Segment("ce_prep", "ce_entry", "ce_submit"),
            Segment("bridge_prep", "bridge_entry", "bridge_submit"),
            Segment("dg", "bridge_submit", "bridge_done"),
            Segment("ce_finish", "bridge_done", "ce_done"),
        ),
    )


def simple_chain(*names: str, segments: Sequence[Segment] = ()) -> StageChain:
    return StageChain(stages=tuple(Stage(n, "client") for n in names), segments=tuple(segments))


def frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """An event frame from dicts with job, stage, t (seconds after T0) and optional fields."""
    data: dict[str, list[Any]] = {c: [] for c in EVENT_SCHEMA}
    for r in rows:
        data["job"].append(r["job"])
        data["stage"].append(r["stage"])
        data["t_ns"].append(T0 + round(float(r["t"]) * NS))
        data["source"].append(r.get("source", "client"))
        data["precision_ns"].append(r.get("precision_ns", 1_000))
        data["agent"].append(r.get("agent", "local"))
        data["clock_offset_ns"].append(r.get("clock_offset_ns", 0))
        attrs = r.get("attrs")
        data["attrs"].append(json.dumps(attrs) if attrs else None)
    return pl.DataFrame(data, schema=EVENT_SCHEMA)


def times_frame(
    times: Mapping[str, np.ndarray],
    *,
    failures: Mapping[int, str] | None = None,
    precision: Mapping[str, int] | None = None,
    prefix: str = "j",
) -> pl.DataFrame:
    """Columnar events: ``times[stage][i]`` = seconds after T0 for job i (NaN = no stamp)."""
    frames = []
    n = max(len(v) for v in times.values())
    jobs = np.array([f"{prefix}{i:06d}" for i in range(n)])
    for stage, arr in times.items():
        a = np.asarray(arr, dtype=np.float64)
        ok = np.isfinite(a)
        m = int(ok.sum())
        frames.append(
            pl.DataFrame(
                {
                    "job": jobs[ok],
                    "stage": [stage] * m,
                    "t_ns": T0 + np.round(a[ok] * NS).astype(np.int64),
                    "source": ["client"] * m,
                    "precision_ns": [int((precision or {}).get(stage, 1_000))] * m,
                    "agent": ["local"] * m,
                    "clock_offset_ns": [0] * m,
                    "attrs": [None] * m,
                },
                schema=EVENT_SCHEMA,
            )
        )
    for i, kind in (failures or {}).items():
        frames.append(
            frame([{"job": str(jobs[i]), "stage": "failed", "t": 0.0, "attrs": {"kind": kind}}])
        )
    return pl.concat(frames)


def info(
    chain: StageChain | None = None,
    *,
    trial_id: str = "p00-t00",
    point_index: int = 0,
    trial_index: int = 0,
    rate: float | None = 1.0,
    planned: int | None = None,
    **kw: Any,
) -> TrialInfo:
    return TrialInfo(
        trial_id=trial_id,
        chain=chain or edgi_chain(),
        point_index=point_index,
        trial_index=trial_index,
        point={"rate": rate},
        offered_rate_per_s=rate,
        planned_jobs=planned,
        started_ns=kw.pop("started_ns", T0),
        **kw,
    )


def fifo(arrivals: np.ndarray, service: float) -> np.ndarray:
    """Departures of a first-come first-served single server with fixed service time."""
    order = np.argsort(arrivals, kind="stable")
    a = arrivals[order]
    k = np.arange(a.size, dtype=np.float64)
    d = service * (k + 1) + np.maximum.accumulate(a - service * k)
    out = np.empty_like(d)
    out[order] = d
    return out


def simulate_edgi(
    rate: float,
    n: int,
    *,
    finish_capacity: float | None = None,
    seed: int = 0,
    submit_late: float = 0.0,
) -> dict[str, np.ndarray]:
    """Stage times (s) of an EDGI-like flow at ``rate`` jobs/s.

    Every component only delays jobs (the seed's Experiment 1 magnitudes) except, when
    ``finish_capacity`` is given, the CE finishing step: a single FIFO server serving
    ``finish_capacity`` jobs/s (the CREAM status loop), followed by a 30-45 s poll delay.
    """
    rng = np.random.default_rng(seed)
    t: dict[str, np.ndarray] = {}
    t["intended"] = np.arange(n) / rate
    t["submit"] = t["intended"] + rng.uniform(0.0, 0.002, n) + submit_late
    t["submit_ack"] = t["submit"] + rng.uniform(0.05, 0.2, n)
    t["ce_entry"] = t["submit"] + rng.uniform(0.1, 0.3, n)
    t["ce_submit"] = t["ce_entry"] + rng.uniform(0.3, 0.5, n)
    t["bridge_entry"] = t["ce_submit"] + rng.uniform(0.5, 1.0, n)
    t["bridge_submit"] = t["bridge_entry"] + rng.uniform(2.3, 3.5, n)
    t["bridge_done"] = t["bridge_submit"] + rng.uniform(52.0, 77.0, n)
    served = t["bridge_done"]
    if finish_capacity is not None:
        served = fifo(t["bridge_done"], 1.0 / finish_capacity)
    t["ce_done"] = served + rng.uniform(30.0, 45.0, n)
    t["client_done"] = t["ce_done"] + rng.uniform(5.0, 10.0, n)
    return t


def write_trial(
    run: Path,
    trial: TrialInfo,
    events: pl.DataFrame,
    *,
    resources: pl.DataFrame | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write a trial directory as the runner does (trial.json, events.csv, resources.csv)."""
    d = run / "trials" / trial.trial_id
    d.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "trial_id": trial.trial_id,
        "point_index": trial.point_index,
        "trial_index": trial.trial_index,
        "point": dict(trial.point),
        "load_model": trial.load_model,
        "offered_rate_per_s": trial.offered_rate_per_s,
        "planned_jobs": trial.planned_jobs,
        "started_ns": trial.started_ns,
        "submit_end_ns": trial.submit_end_ns,
        "ended_ns": trial.ended_ns,
        "status": trial.status,
        "chain": trial.chain.to_dict(),
        "agents": {"local": {"clock_offset_ns": 0, "clock_uncertainty_ns": 0}},
        "background_queue": dict(trial.background_queue) or {"start": 0, "end": 0},
        "cpu_count": trial.cpu_count,
        "late_threshold_ns": trial.late_threshold_ns,
    }
    doc.update(extra or {})
    (d / "trial.json").write_text(json.dumps(doc))
    events.write_csv(d / "events.csv")
    if resources is not None:
        resources.write_csv(d / "resources.csv")
    return d


def cpu_samples(duration_s: float, cpu: float, children: int = 0) -> pl.DataFrame:
    ts = np.arange(0.0, duration_s, 1.0)
    return pl.DataFrame(
        {
            "t_ns": T0 + (ts * NS).astype(np.int64),
            "cpu_percent": np.full(ts.size, cpu),
            "rss_bytes": np.full(ts.size, 100_000_000, dtype=np.int64),
            "children": np.full(ts.size, children, dtype=np.int64),
        }
    )
