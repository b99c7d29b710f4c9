"""From a results directory to ``metrics.json``: read the recorded rows (untrusted: every
line is checked), analyse them, and decide the verdict."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.hosts.sampling.compared import step_sampling_metrics, with_sampling_metrics
from gridbench.io import posix_analysis as deep
from gridbench.io.analysis import (
    SPEEDUP_FORMULA,
    cache_effects,
    concurrency,
    matrix,
    table_keys,
    threshold_document,
    threshold_scopes,
)
from gridbench.io.bonnie import COLUMNS as BONNIE_COLUMNS
from gridbench.io.bonnie import FILE_COLUMNS as BONNIE_FILE_COLUMNS
from gridbench.io.bonnie import RATE_KEY as BONNIE_RATE_KEY
from gridbench.io.clients_analysis import lost_flags
from gridbench.io.clients_analysis import summarise as clients_summary
from gridbench.io.clients_analysis import threshold_document as clients_thresholds
from gridbench.io.clients_analysis import threshold_scopes as clients_scopes
from gridbench.io.http_clients_analysis import all_ok as http_clients_all_ok
from gridbench.io.http_clients_analysis import summarise as http_clients_summary
from gridbench.io.load import load_io_spec_text
from gridbench.io.parse import Histogram
from gridbench.io.posix_analysis import (
    conformance,
    identities_ok,
    replay,
    replay_validity_rows,
)
from gridbench.io.resilience_analysis import summarise as resilience_summary
from gridbench.io.resilience_analysis import validity_flags as resilience_flags
from gridbench.io.service_analysis import all_ok as service_all_ok
from gridbench.io.service_analysis import summarise as service_summary
from gridbench.io.validity import validity
from gridbench.states import FINISHED, run_state
from gridbench.stats import rep
from gridbench.store import raw_files
from gridbench.store.layout import RunDir, write_json
from gridbench.store.records import read_records
from gridbench.store.safe_open import INT64_MAX
from gridbench.thresholds import evaluate_thresholds

SCHEMA = "gridbench.io/1"
#: Points of each latency CDF kept for the report (the histograms can hold thousands).
CDF_POINTS = 200


#: Fields every result row has, and those of a concurrency row (its run's key).
_ROW_FIELDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("target", str),
    ("test", str),
    ("kbps", (int, float)),
    ("bytes", int),
    ("runtime_s", (int, float)),
)
_CONCURRENCY_FIELDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("clients", int),
    ("files", str),
    ("rep", int),
)
_COUNTS = ("kbps", "bytes", "runtime_s")  # measured amounts: never below zero
_MAX_AMOUNT = 1e18  # past this, not a measurement (and numpy's sums would overflow)


def _valid(value: Any, typ: type | tuple[type, ...], high: float) -> bool:
    """``value`` is of ``typ`` (a bool is no number), and a number is in 0..``high``."""
    if not isinstance(value, typ) or isinstance(value, bool):
        return False
    return not isinstance(value, int | float) or 0 <= value <= high


def _check_rows(rows: list[dict[str, Any]], path: Path) -> None:
    for i, r in enumerate(rows, 1):
        fields = dict(_ROW_FIELDS)
        if r.get("kind") == "concurrency":
            fields.update(_CONCURRENCY_FIELDS)
        elif "rep" in r:
            fields["rep"] = int
        for key, typ in fields.items():
            value = r.get(key)
            if not _valid(value, typ, _MAX_AMOUNT if key in _COUNTS else INT64_MAX):
                raise ResultsError(
                    f"row has no valid {key!r} (got {str(value)[:40]!r})",
                    where=f"{path}:{i}",
                    fix="the file was edited or is from another tool; re-run the benchmark",
                )


def latency_cdfs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (target, test) the merged latency histogram as a CDF (ms, fraction), thinned."""
    hs: dict[tuple[str, str], Histogram] = defaultdict(Histogram)
    import numpy as np

    for r in rows:
        if r.get("kind") != "iozone":
            continue
        h = r.get("hist")
        if isinstance(h, list) and len(h) == 2:
            key = (r["target"], r["test"])
            hs[key] = hs[key].merged(
                Histogram(np.asarray(h[0], dtype=float), np.asarray(h[1], dtype=np.int64))
            )
    out = []
    for (target, test), h in hs.items():
        if h.total == 0:
            continue
        cdf = np.cumsum(h.counts) / h.total
        idx = np.unique(np.linspace(0, h.ns.size - 1, min(CDF_POINTS, h.ns.size)).astype(int))
        out.append(
            {
                "target": target,
                "test": test,
                "ms": (h.ns[idx] / 1e6).tolist(),
                "cdf": cdf[idx].tolist(),
            }
        )
    return out


def latency_series(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (target, test, repetition, direction) the per-second I/O count and p99 (ms)
    from fio's latency logs, with the whole-run percentiles."""
    out = []
    for r in rows:
        for d in ("read", "write", "trim"):
            v = r.get(d)
            if not isinstance(v, dict) or not isinstance(v.get("per_second"), dict):
                continue
            ps = v["per_second"]
            out.append(
                {
                    "target": str(r.get("target")),
                    "test": str(r.get("test")),
                    "rep": r.get("rep"),
                    "direction": d,
                    "n": v.get("n"),
                    "p50_ms": v.get("p50"),
                    "p99_ms": v.get("p99"),
                    "p999_ms": v.get("p999"),
                    "second": list(ps.get("second", [])),  # the bin's start, in seconds
                    "bin_ms": ps.get("bin_ms", 1000),  # runs before bins were seconds
                    "ios": list(ps.get("ios", [])),
                    "p99_ms_per_s": list(ps.get("p99_ms", [])),
                }
            )
    return out


def bonnie_summary(rows: list[dict[str, Any]], baseline: str | None) -> list[dict[str, Any]]:
    """Per target and Bonnie column: kB/s (the file tests: files/s, ``per_s``) and CPU%
    across repetitions, speedup."""
    by: dict[tuple[str, str], dict[str, list[float | None]]] = defaultdict(
        lambda: defaultdict(list)
    )
    notes: dict[tuple[str, str], str] = {}
    for r in rows:
        for col, _ in (*BONNIE_COLUMNS, *BONNIE_FILE_COLUMNS):
            c = r.get(col)
            if isinstance(c, dict):
                key = (str(r.get("target")), col)
                by[key]["rate"].append(c.get(BONNIE_RATE_KEY[col]))
                by[key]["cpu"].append(c.get("cpu_pct"))
                if c.get("note"):
                    notes[key] = str(c["note"])
    out: list[dict[str, Any]] = []
    for (target, col), d in by.items():
        kb = rep(d["rate"])
        base = (
            rep(by[(baseline, col)]["rate"])["mean"] if baseline and (baseline, col) in by else None
        )
        sp = None
        if target != baseline and kb["mean"] is not None and base:
            sp = (kb["mean"] - base) / base
        unit = BONNIE_RATE_KEY[col]
        out.append(
            {
                "target": target,
                "column": col,
                unit: kb,
                "cpu_pct": rep(d["cpu"])["mean"],
                f"baseline_{unit}": base,
                "speedup": sp,
                "note": notes.get((target, col), ""),
            }
        )
    return out


def http_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per size and operation: seconds and MiB/s, mean ± sd over repetitions."""
    by: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(int(r.get("size", 0)), str(r.get("op")))].append(r)
    return [
        {
            "size": size,
            "op": op,
            "seconds": rep([r.get("seconds") for r in rs]),
            "mib_s": rep([r.get("mib_s", r.get("mb_s")) for r in rs]),
            "ok": all(bool(r.get("ok")) for r in rs),
        }
        for (size, op), rs in sorted(by.items())
    ]


def build_metrics(run: RunDir) -> dict[str, Any]:
    """The analysis of one io results directory."""
    exp = run.read_experiment_of("io", "storage (io)")
    raw_files.check(run, exp)  # lost raw data is refused, never analysed as a smaller run
    if raw_files.KEY not in exp:
        raw_files.require(run, "rows.jsonl", exp.get("status") in FINISHED)
    spec, _ = load_io_spec_text(run.spec_text(), str(run.spec_file), checked=False)
    rows_path = run.path / "rows.jsonl"
    rows = read_records(rows_path)
    _check_rows(rows, rows_path)
    baseline = spec.baseline
    mat = matrix(rows, baseline)
    bonnie = bonnie_summary(read_records(run.path / "bonnie.jsonl"), baseline)
    conc = concurrency(rows)
    exclusions = [e.model_dump() for e in spec.conformance.exclude]
    replays = read_records(run.path / "replay.jsonl")
    conf = conformance(read_records(run.path / "conformance.jsonl"), baseline, exclusions)
    replayed = replay(replays, baseline)
    scopes = threshold_scopes(threshold_document(mat, bonnie, conc))
    scopes |= deep.threshold_scopes(deep.threshold_paths(conf, replayed))
    client_hosts = spec.clients.hosts if spec.clients is not None else []
    clients = clients_summary(read_records(run.path / "clients.jsonl"), baseline, client_hosts)
    scopes |= clients_scopes(clients_thresholds(clients))
    names = [t.name for t in spec.targets]
    thresholds = [table_keys(r, names) for r in evaluate_thresholds(spec.thresholds, scopes)]
    consistency = read_records(run.path / "consistency.jsonl")
    resilience = resilience_summary(read_records(run.path / "resilience.jsonl"))
    http_clients = http_clients_summary(read_records(run.path / "http_clients.jsonl"))
    service = service_summary(read_records(run.path / "service.jsonl"))
    valid = validity(
        [*rows, *replay_validity_rows(replays)],
        exp.get("targets", []),
        include_flush=spec.iozone.include_flush,
    )
    if extra := resilience_flags(resilience):
        valid = {**valid, "valid": False, "flags": [*valid["flags"], *extra]}
    if extra := lost_flags(clients):  # a client host lost mid-run
        valid = {**valid, "valid": False, "flags": [*valid["flags"], *extra]}
    identities = read_records(run.path / "identities.jsonl")
    return {
        "schema": SCHEMA,
        "name": spec.name,
        "status": run_state(exp.get("status")) or None,
        "error": exp.get("error"),
        "baseline": baseline,
        "speedup_formula": SPEEDUP_FORMULA,
        "repetitions": spec.repetitions,
        "iozone": {
            "file_size": spec.iozone.file_size,
            "record_size": spec.iozone.record_size,
            "include_close": spec.iozone.include_close,
            "include_flush": spec.iozone.include_flush,
        },
        "targets": exp.get("targets", []),
        "matrix": mat,
        "cache_effects": cache_effects(
            mat,
            {str(t.get("name")): str(t.get("cache_used")) for t in exp.get("targets", [])},
            spec.iozone.file_size,
            exp.get("ram_bytes") if isinstance(exp.get("ram_bytes"), int) else None,
        ),
        "latency_cdf": latency_cdfs(rows),
        "latency_series": latency_series(read_records(run.path / "latency_series.jsonl")),
        "concurrency": conc,
        "bonnie": bonnie,
        "consistency": consistency,
        "http": http_summary(read_records(run.path / "http.jsonl")),
        "conformance": conf,
        "replay": replayed,
        "identities": identities,
        "identities_ok": identities_ok(identities),
        "thresholds": thresholds,
        "validity": valid,
        "resilience": resilience,
        # a lost or corrupt byte fails the run (None: no resilience phase)
        "resilience_ok": None if resilience is None else resilience["ok"],
        "http_clients": http_clients,
        "http_clients_ok": http_clients_all_ok(http_clients),
        "service": service,
        "service_ok": service_all_ok(service),
        "clients": clients,
        "thresholds_ok": all(t["passed"] for t in thresholds),
        # a check that was not run (ok None) neither passes nor fails the run
        "consistency_ok": all(
            c.get("ok", False) is True or ("ok" in c and c["ok"] is None) for c in consistency
        ),
    }


def analyze_and_write(run: RunDir) -> dict[str, Any]:
    """Analyse one io results directory and write RUN/metrics.json (job flow's
    ``analysis.write_metrics`` only writes a document it is given)."""
    metrics = build_metrics(run)
    # the hosts its sampling: block sampled, each step a phase; the client_bound rule
    sampled = step_sampling_metrics(run.path, run.read_spec()[1])
    metrics = with_sampling_metrics(metrics, sampled)
    write_json(run.metrics_file, metrics)
    return metrics
