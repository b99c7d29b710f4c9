"""A realistic metrics.json + series.json generator for the report tests.

Five offered rates (20..100 jobs/min, the seed's CREAM/3G Bridge sweep) x 3 trials on the
EDGI stage chain. The per-component trial means are the seed's Table 6 averages scaled by
0.95 / 1.00 / 1.05 for trials 0 / 1 / 2, so every point's mean of valid trial means equals
the seed's number exactly. The CE finishing stage (ce_done) breaks from 60 jobs/min on;
trial p02-t01 is invalid (background load), so the 60/min summary averages trials 0 and 2
(factors 0.95 and 1.05: still the seed's mean). Failures grow with the rate, the 100/min
trials' series are marked down-sampled, and one threshold has no measured value.

``hostile=True`` puts HTML/script payloads in every free-text field a backend or a spec
author controls (experiment name, stage label, failure kind, validity reason, outlier
reason, threshold 'where', knee statement).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

RATES_PER_MIN = (20.0, 40.0, 60.0, 80.0, 100.0)
TRIAL_FACTORS = (0.95, 1.00, 1.05)
SUBMIT_S = 600.0  # each trial submits for 10 minutes
INVALID_TRIAL = "p02-t01"
DOWNSAMPLED_POINT = 4

COMPONENTS = ("ce_prep", "bridge_prep", "dg", "ce_finish")
#: The seed's Table 6 averages (seconds) per rate (jobs/min); overall = sum of these.
SEED_TABLE6: dict[float, dict[str, float]] = {
    rpm: dict(zip((*COMPONENTS, "other"), vals, strict=True))
    for rpm, vals in (
        (20.0, (0.40, 2.85, 60.63, 39.22, 9.27)),
        (40.0, (0.75, 3.49, 69.72, 262.90, 26.97)),
        (60.0, (1.05, 7.13, 68.72, 1796.15, 145.58)),
        (80.0, (1.67, 98.81, 287.30, 2861.87, 240.43)),
        (100.0, (1.67, 7.07, 78.69, 4696.42, 222.72)),
    )
}

STAGES = (
    ("submit", "client", "T1 submit call"),
    ("ce_entry", "ce", "T2 CE entry"),
    ("ce_submit", "ce", "T3 CE submitted to bridge"),
    ("bridge_entry", "bridge", "T4 bridge entry"),
    ("bridge_submit", "bridge", "T5 bridge submitted to DG"),
    ("bridge_done", "bridge", "T6 DG done"),
    ("ce_done", "ce", "T7 CE done"),
    ("client_done", "client", "T8 client saw done"),
)
SEGMENTS = (
    ("submit_to_ce", "submit", "ce_entry", False),
    ("ce_prep", "ce_entry", "ce_submit", True),
    ("ce_to_bridge", "ce_submit", "bridge_entry", False),
    ("bridge_prep", "bridge_entry", "bridge_submit", True),
    ("dg", "bridge_submit", "bridge_done", True),
    ("ce_finish", "bridge_done", "ce_done", True),
    ("ce_to_client", "ce_done", "client_done", False),
)
#: actual/expected throughput per stage and rate (jobs/min).
RATIO: dict[str, dict[float, float]] = {
    "submit": dict.fromkeys(RATES_PER_MIN, 0.99),
    "ce_entry": dict.fromkeys(RATES_PER_MIN, 0.99),
    "ce_submit": {20.0: 0.99, 40.0: 0.98, 60.0: 0.97, 80.0: 0.93, 100.0: 0.91},
    "bridge_entry": {20.0: 0.985, 40.0: 0.975, 60.0: 0.965, 80.0: 0.925, 100.0: 0.905},
    "bridge_submit": {20.0: 0.985, 40.0: 0.975, 60.0: 0.965, 80.0: 0.925, 100.0: 0.905},
    "bridge_done": {20.0: 0.98, 40.0: 0.97, 60.0: 0.96, 80.0: 0.92, 100.0: 0.90},
    "ce_done": {20.0: 0.97, 40.0: 0.93, 60.0: 0.70, 80.0: 0.52, 100.0: 0.41},
    "client_done": {20.0: 0.965, 40.0: 0.925, 60.0: 0.69, 80.0: 0.51, 100.0: 0.40},
}
#: failures per trial by kind and rate; trial i adds i submit time-outs.
FAILURES: dict[str, dict[float, int]] = {
    "submit_timeout": {20.0: 0, 40.0: 1, 60.0: 4, 80.0: 15, 100.0: 30},
    "dropped": {100.0: 5},
    "job_failed": {60.0: 1, 80.0: 2, 100.0: 2},
    "lost": {100.0: 2},
}

XSS = "<script>alert('x')</script>"
BREAKOUT = "</script><script>alert('breakout')</script>"


def trial_id(p: int, t: int) -> str:
    return f"p{p:02d}-t{t:02d}"


def chain(hostile: bool = False) -> dict[str, Any]:
    """The EDGI StageChain.to_dict()."""
    stages = [
        {"name": n, "source": src, "label": lab, "precision_ns": 1_000_000}
        for n, src, lab in STAGES
    ]
    if hostile:
        stages[6]["label"] = "<b onmouseover=alert(1)>CE done</b>"
    return {
        "stages": stages,
        "segments": [{"name": n, "start": a, "end": b, "component": c} for n, a, b, c in SEGMENTS],
    }


def rep(values: list[float]) -> dict[str, Any]:
    """Repetition statistics across trials, as the analysis writes them."""
    a = np.asarray(values, dtype=float)
    n = len(a)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None, "ci95": None}
    std = float(a.std(ddof=1)) if n >= 2 else None
    ci = float(sps.t.ppf(0.975, n - 1)) * std / math.sqrt(n) if std is not None else None
    return {
        "n": n,
        "mean": float(a.mean()),
        "std": std,
        "min": float(a.min()),
        "max": float(a.max()),
        "ci95": ci,
    }


def stats(mean: float, n: int) -> dict[str, Any]:
    """A per-job stats object around ``mean`` (seconds)."""
    std = 0.15 * mean
    return {
        "n": n,
        "mean": mean,
        "min": 0.6 * mean,
        "max": 1.9 * mean,
        "std": std,
        "p50": 0.97 * mean,
        "p90": 1.25 * mean,
        "p99": 1.6 * mean,
        "p999": 1.85 * mean,
        "ci95": float(sps.t.ppf(0.975, n - 1)) * std / math.sqrt(n) if n >= 2 else None,
    }


def _trial(p: int, t: int, rpm: float, hostile: bool) -> dict[str, Any]:
    r = rpm / 60.0
    f = TRIAL_FACTORS[t]
    tid = trial_id(p, t)
    planned = int(rpm * SUBMIT_S / 60.0)
    failures = {
        k: v[rpm] + (t if k == "submit_timeout" and v[rpm] else 0)
        for k, v in FAILURES.items()
        if v.get(rpm)
    }
    if hostile and p == 3:
        failures[BREAKOUT] = 1
    dropped = failures.get("dropped", 0)
    submitted = planned - dropped - failures.get("submit_timeout", 0)
    completed = submitted - failures.get("job_failed", 0) - failures.get("lost", 0)
    base = SEED_TABLE6[rpm]
    means = {c: base[c] * f for c in (*COMPONENTS, "other")}
    means["overall"] = sum(means.values())
    latency = {k: stats(v, completed) for k, v in means.items()}
    latency["submit_lag"] = stats(0.02 * f * (1 + p), submitted)
    latency["submit_call"] = stats(0.35 * f * (1 + p), submitted)
    for name, _, _, comp in SEGMENTS:
        if not comp:
            latency[name] = stats(0.5 * f, completed)
    throughput = {}
    for s, _, _ in STAGES:
        ratio = RATIO[s][rpm] * (1.0 + (t - 1) * 0.02)
        average = ratio * r
        steady = average * 1.01
        throughput[s] = {
            "average": average,
            "steady": steady,
            "expected_ratio": steady / r,
            "edgi_ratio": average / r,
            "count": completed if s not in ("submit", "ce_entry") else submitted,
        }
    growth = r * (1.0 - RATIO["ce_done"][rpm])
    queues = {
        g: {"max": max(1, round(r * means.get(g, 0.5))), "final": 0, "growth_per_s": 0.0}
        for g, _, _, _ in SEGMENTS
    }
    queues["ce_finish"] = {
        "max": round(r * means["ce_finish"] + growth * SUBMIT_S),
        "final": 0,
        "growth_per_s": growth,
    }
    invalid = tid == INVALID_TRIAL
    reasons = []
    if invalid:
        reasons = [
            "background queue grew from 3 to 412 jobs during the trial (other users' load)",
            "late share 12.0% exceeds 5%",
        ]
        if hostile:
            reasons.append("<img src=x onerror=alert('reason')>")
    late = round(planned * (0.12 if invalid else 0.005 * (p + 1)))
    return {
        "trial_id": tid,
        "valid": not invalid,
        "status": "complete",
        "jobs": {
            "planned": planned,
            "submitted": submitted,
            "completed": completed,
            "failed": sum(failures.values()),
            "dropped": dropped,
            "late": late,
        },
        "latency": latency,
        "throughput": throughput,
        "failures": failures,
        "queues": queues,
        "warmup": {"method": "fraction", "fraction": 0.15, "trimmed_jobs": int(0.15 * completed)},
        "validity": {
            "valid": not invalid,
            "reasons": reasons,
            "late_share": late / planned,
            "dropped_share": dropped / planned,
            "client_cpu_max": 35.0 + 8 * p,
            "client_cpu_mean": 12.0 + 4 * p,
            "client_bound": False,
            "coarse_precision": ["ce_prep"] if p == 0 else [],
        },
        "bottleneck": "ce_done" if RATIO["ce_done"][rpm] < 0.9 else None,
        "background_queue": {"start": 3, "end": 412 if invalid else 3 + t},
    }


def _summary(trials: list[dict[str, Any]], hostile: bool, p: int) -> dict[str, Any]:
    valid = [t for t in trials if t["valid"]]
    lat_keys = list(valid[0]["latency"])
    kinds = sorted({k for t in trials for k in t["failures"]})
    outliers = []
    if any(not t["valid"] for t in trials):
        bad = next(t for t in trials if not t["valid"])
        outliers.append(
            {
                "trial_id": bad["trial_id"],
                "metric": "latency.overall.mean",
                "value": bad["latency"]["overall"]["mean"],
                "reason": "other jobs interfered (background queue 3 → 412)",
                "kept": False,
            }
        )
    if p == 4:
        outliers.append(
            {
                "trial_id": trial_id(4, 2),
                "metric": "throughput.client_done.average",
                "value": trials[2]["throughput"]["client_done"]["average"],
                "reason": "<i>CE restart</i> explained the dip"
                if hostile
                else "a CE restart explains the dip",
                "kept": True,
            }
        )
    return {
        "throughput": {
            s: rep([t["throughput"][s]["average"] for t in valid]) for s, _, _ in STAGES
        },
        "expected_ratio": {
            s: rep([t["throughput"][s]["expected_ratio"] for t in valid]) for s, _, _ in STAGES
        },
        "latency": {k: rep([t["latency"][k]["mean"] for t in valid]) for k in lat_keys},
        "failures": {k: rep([float(t["failures"].get(k, 0)) for t in valid]) for k in kinds},
        "valid_trials": len(valid),
        "invalid_trials": len(trials) - len(valid),
        "outliers": outliers,
    }


def make_metrics(*, hostile: bool = False, name: str = "edgi-demo-cream") -> dict[str, Any]:
    """The metrics.json dict of the fixture experiment."""
    pts: list[dict[str, Any]] = []
    for p, rpm in enumerate(RATES_PER_MIN):
        ts = [_trial(p, t, rpm, hostile) for t in range(len(TRIAL_FACTORS))]
        pts.append(
            {
                "index": p,
                "point": {"rate": rpm},
                "offered_rate_per_s": rpm / 60.0,
                "trials": ts,
                "summary": _summary(ts, hostile, p),
                "bottleneck": "ce_done" if RATIO["ce_done"][rpm] < 0.9 else None,
            }
        )
    overall_mean = pts[-1]["summary"]["latency"]["overall"]["mean"]
    return {
        "schema": "gridbench.metrics/1",
        "experiment": XSS if hostile else name,
        "load_model": "open",
        "chain": chain(hostile),
        "points": pts,
        "knee": {
            "highest_sustained_rate_per_s": 40.0 / 60.0,
            "first_failing_rate_per_s": 1.0,
            "capacity_per_s": 0.70,
            "capacity_ci95": [0.66, 0.74],
            "limited_by": "ce_done",
            "statement": "sustains up to 0.667/s (40/min); breaks at 1/s (60/min) in ce_done"
            + (f" {XSS}" if hostile else ""),
        },
        "bottleneck": {
            "stage": "ce_done",
            "segment": "ce_finish",
            "from_rate_per_s": 1.0,
            "evidence": "ce_done actual/expected falls to 0.70 at 1/s while every upstream "
            "stage stays above 0.96; the CE finishing queue grows during submission",
            "statement": "bottleneck: ce_done (CE finishing) from 1/s (60/min)",
        },
        "validity": {
            "valid": True,
            "invalid_trials": [INVALID_TRIAL],
            "reasons": [f"{INVALID_TRIAL}: background queue grew from 3 to 412 jobs"],
        },
        "thresholds": [
            {
                "metric": "latency.overall.mean",
                "op": "<",
                "value": 600.0,
                "actual": overall_mean,
                "passed": False,
                "where": f"spec.yaml:31 {BREAKOUT}" if hostile else "spec.yaml:31",
            },
            {
                "metric": "throughput.client_done.expected_ratio",
                "op": ">=",
                "value": 0.9,
                "actual": pts[0]["summary"]["expected_ratio"]["client_done"]["mean"],
                "passed": True,
                "where": "spec.yaml:33",
            },
            {
                "metric": "failures.submit_timeout.share",
                "op": "<",
                "value": 0.05,
                "actual": None,
                "passed": False,
                "where": "spec.yaml:35",
            },
        ],
    }


def _curve(t: np.ndarray, level: float, start: float, end: float, rng: Any) -> np.ndarray:
    """A rate that ramps up after ``start``, holds ``level`` and stops after ``end``."""
    up = 1.0 - np.exp(-np.clip(t - start, 0, None) / 30.0)
    down = np.where(t > end, np.exp(-(t - end) / 60.0), 1.0)
    noise = 1.0 + 0.05 * rng.standard_normal(len(t))
    out: np.ndarray = np.clip(level * up * down * noise, 0.0, None)
    return out


def _xy(t: np.ndarray, v: np.ndarray) -> dict[str, list[float]]:
    return {"t": [round(float(x), 3) for x in t], "v": [round(float(x), 6) for x in v]}


def make_series(metrics: dict[str, Any], n: int = 240) -> dict[str, dict[str, Any]]:
    """series.json per trial id, consistent with ``metrics``."""
    rng = np.random.default_rng(20240611)
    out: dict[str, dict[str, Any]] = {}
    for p in metrics["points"]:
        r = p["offered_rate_per_s"]
        for tr in p["trials"]:
            lat = tr["latency"]
            end = SUBMIT_S + 1.3 * lat["overall"]["mean"]
            t = np.linspace(1.0, end, n)
            punctual, windowed = {}, {}
            delay = 0.0
            for s, _, _ in STAGES:
                level = tr["throughput"][s]["average"]
                punctual[s] = _xy(t, _curve(t, level, delay, end, rng) * (t / (t + 60.0)))
                windowed[s] = _xy(t, _curve(t, level, delay, SUBMIT_S + delay, rng))
                delay += 0.1 * lat["overall"]["mean"] / len(STAGES)
            queues = {}
            for g, _, _, _ in SEGMENTS:
                q = tr["queues"][g]
                peak = np.interp(t, [0, SUBMIT_S, end], [0, q["max"], 0])
                queues[g] = _xy(t, np.round(peak))
            hist = {}
            for k in (*COMPONENTS, "overall"):
                s = lat[k]
                edges = np.linspace(s["min"], s["max"], 31)
                centres = (edges[:-1] + edges[1:]) / 2
                w = np.exp(-0.5 * ((centres - s["mean"]) / s["std"]) ** 2)
                counts = np.round(w / w.sum() * s["n"]).astype(int)
                hist[k] = {
                    "edges": [round(float(e), 6) for e in edges],
                    "counts": [int(c) for c in counts],
                }
            offered = np.where(t <= SUBMIT_S, r, 0.0)
            out[tr["trial_id"]] = {
                "downsampled": p["index"] == DOWNSAMPLED_POINT,
                "punctual": punctual,
                "windowed": {**windowed, "window_s": 60.0},
                "queues": queues,
                "latency_hist": hist,
                "offered": _xy(t, offered),
                "submitted": _xy(t, offered * tr["jobs"]["submitted"] / tr["jobs"]["planned"]),
            }
    return out


def spec_summary(*, hostile: bool = False) -> dict[str, Any]:
    """What a caller passes as spec_summary: the spec's essentials."""
    return {
        "description": "CREAM CE + 3G Bridge job flow at 20-100 jobs/min"
        + (f" {XSS}" if hostile else ""),
        "backend": {"type": "reference", "endpoint": "https://ce.example.org:8443/cream"},
        "load": {"model": "open", "rates": "20, 40, 60, 80, 100 /min", "duration": "10m"},
        "repetitions": 3,
        "job": {"command": ["/bin/sleep", "60"]},
        "not_tested": ["ARC and UNICORE endpoints", "job output transfer"],
    }


def write_fixture(
    run_dir: Path, *, hostile: bool = False
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Write RUN/metrics.json and RUN/trials/<id>/series.json; return (metrics, series)."""
    metrics = make_metrics(hostile=hostile)
    series = make_series(metrics)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1), encoding="utf-8")
    for tid, s in series.items():
        d = run_dir / "trials" / tid
        d.mkdir(parents=True, exist_ok=True)
        (d / "series.json").write_text(json.dumps(s), encoding="utf-8")
    return metrics, series


def spec_yaml(*, hostile: bool = False) -> str:
    """The spec.yaml a run would record (the spec summary's essentials, as YAML)."""
    s = spec_summary(hostile=hostile)
    return (
        f"description: {json.dumps(s['description'])}\n"
        "backend: {type: reference, endpoint: 'https://ce.example.org:8443/cream'}\n"
        "load: {model: open, rates: '20, 40, 60, 80, 100 /min', duration: 10m}\n"
        "repetitions: 3\n"
        "job: {command: [/bin/sleep, '60']}\n"
    )


def build(
    metrics: dict[str, Any], series: dict[str, dict[str, Any]], *, hostile: bool = False
) -> Any:
    """The job-flow report of the fixture, with its spec and what it leaves untested."""
    from gridbench.jobflow.report import build_report

    return build_report(
        metrics,
        series,
        spec_yaml=spec_yaml(hostile=hostile),
        not_tested=spec_summary(hostile=hostile)["not_tested"],
    )
