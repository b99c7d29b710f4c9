"""From a net results directory to ``metrics.json`` (``gridbench.net/1``): read the
records (untrusted, :mod:`gridbench.messaging.intake`), summarise each pattern
(:mod:`gridbench.messaging.summaries`) against the floor measured in the same run
(:mod:`gridbench.messaging.floors`), find the overheads, judge validity, evaluate the
spec's thresholds, and give the comparable figures.

Thresholds read dotted paths. Paths under a pattern name are keyed, not indexed, so a path
names one figure whatever else the run measured::

    pingpong.<transport>.<env>.<size_bytes>.<field>        rtt_ms.mean, rtt_ms.p99, speed_mb_s,
                                                           floor.ratio, failed_tests ...
    echo.<transport>.<env>.<config>.<calls>.<field>        mean_ms, p99_ms, total_ms.mean ...
    echo.<transport>.<env>.<config>.mean_ms | floor.ratio  the series as a whole
    echo_scaling.<transport>.<env>.<config>.<clients>.<field>   mean_ms, p99_ms ...
    burst.<transport>.<env>.<field>                        enqueue_ms.mean, enqueue_cpu_ms.mean ...
    transfer.<tool>.<env>.<direction>.<streams>.<field>    mb_s.mean, floor.ratio ...
    floor.<env>.sockperf.<size_bytes>.rtt_ms.mean · floor.<env>.iperf3.<streams>.<direction>.mb_s

Any other path reads the metrics document itself (``overheads_count``, ``validity.valid``).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Final

from gridbench.errors import ResultsError
from gridbench.family import Figure
from gridbench.hosts.sampling.compared import (
    sampling_figures,
    step_sampling_metrics,
    with_sampling_metrics,
)
from gridbench.messaging import summaries as sm
from gridbench.messaging.floors import floor_summary
from gridbench.messaging.hdr import PRECISION_NOTE
from gridbench.messaging.intake import read_net_records
from gridbench.messaging.metrics_schema import validate_metrics
from gridbench.messaging.overheads import env_phrase, overheads, size_text
from gridbench.messaging.records import RECORDS_FILE
from gridbench.messaging.rr import rr_summary
from gridbench.messaging.validity import validity
from gridbench.states import FINISHED, run_state
from gridbench.store import raw_files
from gridbench.store.layout import RunDir, write_json
from gridbench.thresholds import DEFAULT_SCOPE, Scope, evaluate_thresholds, single
from gridbench.units import parse_size

SCHEMA: Final = "gridbench.net/1"
DEFAULT_FACTOR: Final = 2.0
DEFAULT_PAYLOAD: Final = 64
FORMULAS: Final = (
    "speed = 2·s / RTT (MB/s = 10^6 B/s, RTT the mean); one-way ≈ RTT / 2; "
    "StdDev % = sd / mean · 100; ratio = figure / floor (RTT) or floor / figure (MB/s)"
)


def _experiment_factor(exp: Mapping[str, Any], where: str) -> float:
    f = exp.get("floor_factor", DEFAULT_FACTOR)
    if f is None:
        return DEFAULT_FACTOR
    if isinstance(f, bool) or not isinstance(f, numbers.Real) or not float(f) > 1.0:
        raise ResultsError(
            f"floor_factor must be a number above 1, got {f!r}",
            where=f"{where}: floor_factor",
            fix="restore experiment.json from the run, or set floor_factor to e.g. 2.0",
        )
    return float(f)


def _spec_parts(run: RunDir) -> tuple[int, list[Any]]:
    """The echo payload (bytes) and the threshold list of the spec as run."""
    _, data = run.read_spec()
    data = data if isinstance(data, Mapping) else {}
    echo = data.get("echo")
    echo = echo if isinstance(echo, Mapping) else {}
    try:
        payload = parse_size(echo.get("payload", DEFAULT_PAYLOAD))
    except ValueError as exc:
        raise ResultsError(str(exc), where=f"{run.spec_file}: echo.payload") from None
    ths = data.get("thresholds") or []
    if not isinstance(ths, list):
        raise ResultsError(
            "thresholds is not a list",
            where=f"{run.spec_file}: thresholds",
            fix="restore spec.yaml from the spec the run was started with",
        )
    return payload, ths


def _notes(exp: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> list[str]:
    """experiment.json's notes, then those only the records hold (a killed run writes its
    notes to experiment.json only at the end), each once."""
    notes = [str(n) for n in exp.get("notes") or [] if isinstance(n, str | int | float)]
    for r in records:
        if r["pattern"] != "note" or r["text"] in notes:
            continue
        about = " ".join(
            str(x)
            for x in (r.get("transport") or r.get("tool"), r.get("env") and env_phrase(r["env"]))
            if x
        )
        notes.append(f"{about}: {r['text']}" if about else str(r["text"]))
    return list(dict.fromkeys(notes))


def build_metrics(run: RunDir) -> dict[str, Any]:
    """The analysis of one net results directory (see the module docstring)."""
    exp = run.read_experiment_of("net", "messaging (net)")
    raw_files.check(run, exp)  # lost records are refused, never analysed as a smaller run
    if raw_files.KEY not in exp:
        raw_files.require(run, RECORDS_FILE, exp.get("status") in FINISHED)
    factor = _experiment_factor(exp, str(run.experiment_file))
    payload, thresholds_spec = _spec_parts(run)
    records = read_net_records(run.path / RECORDS_FILE)
    by: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault(str(r["pattern"]), []).append(r)
    envs = [str(e) for e in exp.get("environments") or [] if isinstance(e, str)]
    floor = floor_summary(by.get("floor", []), envs)
    pats: dict[str, list[dict[str, Any]]] = {
        "pingpong": sm.pingpong(by.get("pingpong", []), floor, factor),
        "echo": sm.echo(by.get("echo", []), floor, factor, payload),
        "echo_scaling": sm.echo_scaling(by.get("echo_scale", [])),
        "burst": sm.burst(by.get("burst", [])),
        "transfer": sm.transfer(by.get("transfer", []), floor, factor),
    }
    rr = rr_summary(by["rr"]) if by.get("rr") else None  # UDP and request/response
    found = overheads(pats["pingpong"], pats["echo"], pats["transfer"])
    metrics: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": "net",
        "name": str(exp.get("name") or run.id),
        "status": run_state(exp.get("status")) or None,
        "error": exp.get("error") if isinstance(exp.get("error"), str) else None,
        "environments": envs,
        "floor_factor": factor,
        "echo_payload": payload,
        "formulas": FORMULAS,
        "precision": PRECISION_NOTE,
        "records": len(records),
        **pats,
        "floor": floor,
        "rr": rr,
        "overheads": found,
        "overheads_count": len(found),
        "validity": validity(pats, floor, factor),
        "notes": _notes(exp, records),
    }
    results = evaluate_thresholds(thresholds_spec, threshold_scopes(metrics))
    results = [void_below_floor(r, factor) for r in results]
    metrics["thresholds"] = results
    metrics["thresholds_ok"] = all(t["passed"] for t in results)
    return metrics


def void_below_floor(result: dict[str, Any], factor: float) -> dict[str, Any]:
    """A threshold on a floor ratio the ``below_floor`` rule voids (more than ``factor``
    times better than the floor) does not pass: that comparison is void (docs/net.md,
    Validity), so the verdict and the headline say the same."""
    actual = result.get("actual")
    if (
        not result.get("passed")
        or not str(result.get("metric", "")).endswith("floor.ratio")
        or not isinstance(actual, int | float)
        or actual <= 0
        or actual >= 1.0 / factor
    ):
        return result
    return {
        **result,
        "passed": False,
        "reason": f"void: {1.0 / actual:.1f}× better than the network's floor (limit "
        f"{factor:g}×), so the floor or the figure measured something else (below_floor)",
    }


def analyze_and_write(run: RunDir) -> dict[str, Any]:
    """Analyse one net results directory and write RUN/metrics.json."""
    metrics = build_metrics(run)
    # the hosts its sampling: block sampled, each step a phase; the client_bound rule
    sampled = step_sampling_metrics(run.path, run.read_spec()[1])
    metrics = with_sampling_metrics(metrics, sampled)
    write_json(run.metrics_file, metrics)
    return metrics


# -- thresholds ----------------------------------------------------------------------------


def threshold_document(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The pattern figures keyed by name (see the module docstring for the paths)."""
    doc: dict[str, Any] = {
        k: {} for k in ("pingpong", "echo", "echo_scaling", "burst", "transfer", "floor")
    }
    for s in metrics.get("pingpong", []):
        at = doc["pingpong"].setdefault(s["transport"], {}).setdefault(s["env"], {})
        at.update({str(r["size_bytes"]): r for r in s["rows"]})
    for s in metrics.get("echo", []):
        at = doc["echo"].setdefault(s["transport"], {}).setdefault(s["env"], {})
        at[s["config"]] = {**s, **{str(r["calls"]): r for r in s["rows"]}}
    for s in metrics.get("echo_scaling", []):
        at = doc["echo_scaling"].setdefault(s["transport"], {}).setdefault(s["env"], {})
        at[s["config"]] = {"fit": s["fit"], **{str(p["clients"]): p for p in s["points"]}}
    for b in metrics.get("burst", []):
        doc["burst"].setdefault(b["transport"], {})[b["env"]] = b
    for t in metrics.get("transfer", []):
        at = doc["transfer"].setdefault(t["tool"], {}).setdefault(t["env"], {})
        at.setdefault(t["direction"], {})[str(t["streams"])] = t
    for f in metrics.get("floor", []):
        iperf: dict[str, Any] = {}
        for i in f["iperf3"]:
            iperf.setdefault(str(i["streams"]), {})[i["direction"]] = i
        doc["floor"][f["env"]] = {
            "sockperf": {str(s["size_bytes"]): s for s in f["sockperf"]},
            "iperf3": iperf,
        }
    return doc


def threshold_scopes(metrics: Mapping[str, Any]) -> dict[str, Scope]:
    """net's scopes: the keyed pattern figures, else the metrics document itself."""
    doc = threshold_document(metrics)
    scopes: dict[str, Scope] = {k: single(doc, f"net {k}") for k in doc}
    scopes[DEFAULT_SCOPE] = single(metrics, "net metrics")
    return scopes


# -- comparable figures --------------------------------------------------------------------


def _fig(key: str, label: str, unit: str, samples: Sequence[Any], better: bool) -> Figure | None:
    vals = tuple(
        float(x) for x in samples if isinstance(x, int | float) and not isinstance(x, bool)
    )
    return Figure(key, label, unit, vals, higher_is_better=better) if vals else None


def figures(metrics: Mapping[str, Any]) -> list[Figure]:
    """Comparable figures with stable keys, each with its repeated measurements:
    ``pingpong.<t>.<env>.<size>.rtt_ms`` (per-test mean RTTs),
    ``echo.<t>.<env>.<config>.<calls>.mean_ms`` and
    ``echo_scaling.<t>.<env>.<config>.<clients>.mean_ms`` (per-repetition means),
    ``burst.<t>.<env>.first_ms``, ``.enqueue_ms`` (wall) and ``.enqueue_cpu_ms`` (the
    enqueuing thread's CPU time) per repetition, and
    ``transfer.<tool>.<env>.<direction>.<streams>.mb_s`` (per-repetition MB/s), and the
    sampled hosts' ``sampling.<host>.<step>.cpu_busy_pct`` (docs/hosts.md)."""
    validate_metrics(metrics)  # foreign input: compare and history do not check it first
    out: list[Figure | None] = []
    for s in metrics.get("pingpong", []):
        t, env = s["transport"], s["env"]
        for r in s["rows"]:
            size = int(r["size_bytes"])
            label = f"{t} {env_phrase(env)}: RTT at {size_text(size)}"
            out.append(
                _fig(
                    f"pingpong.{t}.{env}.{size}.rtt_ms",
                    label,
                    "ms",
                    r.get("test_means_ms") or [],
                    False,
                )
            )
    for s in metrics.get("echo", []):
        t, env, cfg = s["transport"], s["env"], s["config"]
        for r in s["rows"]:
            label = f"{t} echo ({cfg}) {env_phrase(env)}: ms per call, series of {r['calls']}"
            key = f"echo.{t}.{env}.{cfg}.{r['calls']}.mean_ms"
            out.append(_fig(key, label, "ms", r.get("rep_means_ms") or [], False))
    for s in metrics.get("echo_scaling", []):
        t, env, cfg = s["transport"], s["env"], s["config"]
        for p in s["points"]:
            label = f"{t} echo ({cfg}) {env_phrase(env)}: ms per call, {p['clients']} clients"
            key = f"echo_scaling.{t}.{env}.{cfg}.{p['clients']}.mean_ms"
            out.append(_fig(key, label, "ms", p.get("rep_means_ms") or [], False))
    for b in metrics.get("burst", []):
        t, env = b["transport"], b["env"]
        for what, text in (
            ("first_ms", "first response"),
            ("enqueue_ms", "enqueue all (wall)"),
            ("enqueue_cpu_ms", "enqueue all (client CPU)"),
        ):
            label = f"{t} burst of {b.get('calls')} {env_phrase(env)}: {text}"
            out.append(
                _fig(f"burst.{t}.{env}.{what}", label, "ms", b.get(f"rep_{what}") or [], False)
            )
    for x in metrics.get("transfer", []):
        key = f"transfer.{x['tool']}.{x['env']}.{x['direction']}.{x['streams']}.mb_s"
        label = f"{x['tool']} {env_phrase(x['env'])} ({x['direction']}, {x['streams']} streams)"
        out.append(_fig(key, label, "MB/s", x.get("samples_mb_s") or [], True))
    out += sampling_figures(metrics)  # the hosts' CPU per step (a sampling: block)
    return [f for f in out if f is not None]
