"""io's report as typed sections (:mod:`gridbench.sections`): the headline (run status,
thresholds, consistency checks, validity flags, each stated once), the evaluation summary
and every io table and chart. Every renderer (terminal, HTML, CSV/JSON, dashboard) draws
the :class:`~gridbench.sections.Report` this returns; nothing here knows how.

One public entry, :func:`build_report`; the tables are in :mod:`gridbench.io.report_tables`
and :mod:`gridbench.io.report_checks`, the charts in :mod:`gridbench.io.report_charts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from gridbench.hosts.sampling.compared import client_bound_finding
from gridbench.io.matrix import LABEL
from gridbench.io.report_bonnie import bonnie_files_table, bonnie_table
from gridbench.io.report_charts import charts
from gridbench.io.report_checks import (
    cache_table,
    consistency_table,
    runtime_table,
    threshold_entries,
    threshold_table,
    validity_table,
)
from gridbench.io.report_clients import findings as clients_findings
from gridbench.io.report_clients import sections as clients_sections
from gridbench.io.report_http_clients import findings as http_clients_findings
from gridbench.io.report_http_clients import sections as http_clients_sections
from gridbench.io.report_posix import in_depth_findings, in_depth_sections
from gridbench.io.report_resilience import findings as resilience_findings
from gridbench.io.report_resilience import sections as resilience_sections
from gridbench.io.report_service import findings as service_findings
from gridbench.io.report_service import sections as service_sections
from gridbench.io.report_tables import (
    concurrency_table,
    fmt_speedup,
    http_table,
    matrix_by_test,
    matrix_export,
    matrix_table,
    targets_of,
    tests_of,
)
from gridbench.io.validity import CACHED_WRITE, MIN_RUNTIME_S, SHORT_RUNTIME
from gridbench.sections import (
    Finding,
    Report,
    Section,
    Statements,
    Status,
)
from gridbench.states import COMPLETE, run_state
from gridbench.testplan import (
    Configured,
    Masthead,
    Story,
    family_report,
    run_span,
    thresholds_finding,
)
from gridbench.units import format_size

__all__ = ["build_report"]


def build_report(metrics: Mapping[str, Any], **configured: Unpack[Configured]) -> Report:
    """The report of an io run's ``metrics.json`` (schema ``gridbench.io/1``).

    ``spec_yaml`` and ``plan`` (the spec's declared test plan as a table) go to the
    evaluation summary's "how it was configured"; ``not_tested`` to what is left open;
    ``experiment`` (the run's experiment.json) adds when the run started and ended."""
    name = str(metrics.get("name", "io"))
    exp = configured.get("experiment") or {}
    story = Story(_findings(metrics), _tested(metrics, exp), _outcome(metrics), _left_open(metrics))
    sections: list[Section | None] = [
        cache_table(metrics),
        _cache_statements(metrics),
        matrix_table(metrics),
        matrix_by_test(metrics),
        bonnie_table(metrics),
        bonnie_files_table(metrics),
        concurrency_table(metrics),
        consistency_table(metrics),
        http_table(metrics),
        *in_depth_sections(metrics),
        threshold_table(metrics),
        validity_table(metrics),
        runtime_table(metrics),
        *charts(metrics),
        *resilience_sections(metrics),
        *http_clients_sections(metrics),
        *service_sections(metrics),
        *clients_sections(metrics),
    ]
    exports = matrix_export(metrics)
    meta = f"{metrics.get('schema')} · baseline {metrics.get('baseline')}"
    return family_report(
        Masthead("io", name, "storage benchmark", meta),
        story,
        configured,
        sections,
        notes=_notes(metrics),
        exports=(exports,) if exports is not None else (),
        data=metrics,
    )


# -- the headline --------------------------------------------------------------------------


def _flags(metrics: Mapping[str, Any], rule: str) -> list[Mapping[str, Any]]:
    v = metrics.get("validity")
    flags = v.get("flags") if isinstance(v, Mapping) else None
    if not isinstance(flags, list):
        return []
    return [f for f in flags if isinstance(f, Mapping) and f.get("rule") == rule]


def _where(f: Mapping[str, Any]) -> str:
    test = LABEL.get(str(f.get("test")), str(f.get("test")))
    if f.get("kind") == "concurrency":
        test += f" with {f.get('clients')} clients"
    return f"{f.get('target')} {test}"


def _status_finding(metrics: Mapping[str, Any]) -> Finding | None:
    status = run_state(metrics.get("status"))
    if status in ("", COMPLETE):
        return None
    return Finding("fail", f"run {status}: {metrics.get('error')}")


def _threshold_finding(metrics: Mapping[str, Any]) -> Finding | None:
    ths = threshold_entries(metrics)
    failed = [f"{test} on {target}: {detail}" for test, target, ok, detail in ths if not ok]
    return thresholds_finding(len(ths), failed)


def _consistency_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    checks = [c for c in metrics.get("consistency", []) if isinstance(c, Mapping)]
    if not checks:
        return []
    failed = [c for c in checks if c.get("ok") is not True and c.get("ok") is not None]
    skipped = [c for c in checks if "ok" in c and c.get("ok") is None]
    out = []
    ran = len(checks) - len(skipped)
    if failed:
        out.append(
            Finding(
                "fail",
                f"consistency checks: some FAILED ({len(failed)} of {ran} run)",
                "; ".join(
                    f"{c.get('target')} {c.get('check')}: {c.get('detail', '')}" for c in failed
                ),
            )
        )
    else:
        out.append(Finding("pass", f"consistency checks: all {ran} run passed"))
    if skipped:
        out.append(
            Finding(
                "info",
                f"{len(skipped)} consistency check(s) not run",
                "; ".join(
                    f"{c.get('target')} {c.get('check')}: {c.get('detail', '')}" for c in skipped
                ),
            )
        )
    return out


def _validity_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    out = []
    short = _flags(metrics, SHORT_RUNTIME)
    if short:
        shortest = min(float(f.get("runtime_ms") or 0.0) for f in short)
        worst = [f.get("resolution") for f in short]
        res = (
            "no resolution at all"
            if any(r is None for r in worst)
            else f"kB/s good to {max(float(r) for r in worst if r is not None):.0%} at worst"
        )
        out.append(
            Finding(
                "warn",
                f"{len(short)} figure(s) timed over less than {MIN_RUNTIME_S * 1000:.0f} ms "
                f"(down to {shortest:g} ms: {res}): too short for fio's 1 ms resolution",
                "; ".join(_where(f) for f in short),
            )
        )
    cached = _flags(metrics, CACHED_WRITE)
    if cached:
        modes = sorted({str(f.get("cache_used")) for f in cached})
        out.append(
            Finding(
                "warn",
                f"{len(cached)} write figure(s) measured the page cache, not the storage "
                f"(cache mode {', '.join(modes)}, no fsync timed)",
                "; ".join(_where(f) for f in cached),
            )
        )
    if (bound := client_bound_finding(metrics)) is not None:
        out.append(bound)
    return out


def _within_noise(cand: Any, base: Any) -> bool | None:
    """Whether two kB/s figures (rep stats) lie inside each other's noise: their 95%
    confidence intervals overlap. None when either has one repetition (no interval)."""
    if not (isinstance(cand, Mapping) and isinstance(base, Mapping)):
        return None
    values = [cand.get("mean"), base.get("mean"), cand.get("ci95"), base.get("ci95")]
    if not all(isinstance(v, int | float) for v in values):
        return None
    m1, m0, h1, h0 = (float(v) for v in values)  # type: ignore[arg-type]
    return abs(m1 - m0) <= h1 + h0


def _speedup_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    """Per candidate the range of its speedups against the baseline (information), and
    whether they are inside the noise of the repetitions: a difference the confidence
    intervals cannot tell from zero says so (issue 41: two targets on one disk showed
    "speedup -51% ... +68%" with nothing saying it was noise)."""
    base = metrics.get("baseline")
    if not base:
        return []
    entries = [m for m in metrics.get("matrix", []) if isinstance(m, Mapping)]
    base_kb = {str(m.get("test")): m.get("kbps") for m in entries if m.get("target") == base}
    out = []
    for target in targets_of(metrics):
        if target == base:
            continue
        mine = [
            m for m in entries
            if m.get("target") == target and isinstance(m.get("speedup"), int | float)
        ]  # fmt: skip
        if not mine:
            continue
        sps = [(float(m["speedup"]), str(m["test"])) for m in mine]
        (lo, lo_t), (hi, hi_t) = min(sps), max(sps)
        text = f"{target} against {base}: speedup {fmt_speedup(lo)} ({LABEL.get(lo_t, lo_t)})"
        if len(sps) > 1:
            text += f" to {fmt_speedup(hi)} ({LABEL.get(hi_t, hi_t)})"
        noise = [_within_noise(m.get("kbps"), base_kb.get(str(m.get("test")))) for m in mine]
        if all(n is None for n in noise):
            text += (
                "; one repetition each, so the noise is not known: no difference can be told "
                "from it (repetitions: 3 or more)"
            )
        elif all(n is not False for n in noise):
            text += (
                "; every difference is inside the noise of the repetitions (their 95% "
                "confidence intervals overlap): no difference is shown"
            )
        else:
            beyond = sum(1 for n in noise if n is False)
            inside = sum(1 for n in noise if n is True)
            if inside:
                text += (
                    f"; {beyond} of {len(noise)} test(s) differ beyond the noise of the "
                    f"repetitions, {inside} are inside it"
                )
        out.append(Finding("info", text))
    return out


def _findings(metrics: Mapping[str, Any]) -> list[Finding]:
    found = [
        _status_finding(metrics),
        _threshold_finding(metrics),
        *_consistency_findings(metrics),
        *resilience_findings(metrics),
        *http_clients_findings(metrics),
        *service_findings(metrics),
        *clients_findings(metrics),
        *_validity_findings(metrics),
        *_speedup_findings(metrics),
        *in_depth_findings(metrics),
    ]
    out = [f for f in found if f is not None]
    if run_state(metrics.get("status")) == COMPLETE and not any(f.status != "info" for f in out):
        out.insert(0, Finding("pass", "run completed; no thresholds or checks were declared"))
    return out


# -- the evaluation summary ----------------------------------------------------------------


def _tested(metrics: Mapping[str, Any], exp: Mapping[str, Any]) -> list[tuple[str, str]]:
    targets = [t for t in metrics.get("targets", []) if isinstance(t, Mapping)]
    io = metrics.get("iozone", {}) if isinstance(metrics.get("iozone"), Mapping) else {}
    out = [("experiment", str(metrics.get("name")))]
    out.append(
        ("targets", ", ".join(f"{t.get('name')} ({t.get('path')})" for t in targets) or "none")
    )
    out.append(("baseline", str(metrics.get("baseline") or "none")))
    tests = [LABEL.get(t, t) for t in tests_of(metrics)]
    if tests:
        out.append(
            (
                "iozone tests",
                f"{', '.join(tests)}; file {format_size(int(io.get('file_size') or 0))}, "
                f"record {format_size(int(io.get('record_size') or 0))}",
            )
        )
    if metrics.get("concurrency"):
        clients = sorted({int(c["clients"]) for c in metrics["concurrency"]})
        out.append(("concurrency", f"{', '.join(map(str, clients))} clients"))
    if metrics.get("bonnie"):
        out.append(("Bonnie", "bonnie++ profile"))
    if metrics.get("consistency"):
        checks = sorted({str(c.get("check")) for c in metrics["consistency"]})
        out.append(("consistency checks", ", ".join(checks)))
    if metrics.get("http"):
        sizes = sorted({int(h["size"]) for h in metrics["http"]})
        out.append(("HTTP transfers", ", ".join(format_size(s) for s in sizes)))
    out.append(("repetitions", str(metrics.get("repetitions"))))
    out.append(
        (
            "cache mode",
            "; ".join(
                f"{t.get('name')}: {t.get('cache_used')}"
                + (
                    f" (requested {t.get('cache_requested')})"
                    if t.get("cache_requested") != t.get("cache_used")
                    else ""
                )
                for t in targets
            )
            or "not recorded",
        )
    )
    if tests:
        out.append(
            (
                "timing",
                "close() always timed (fio); flush (fsync) "
                + ("timed (-e)" if io.get("include_flush") else "not timed"),
            )
        )
    return out + run_span(exp)


def _outcome(metrics: Mapping[str, Any]) -> list[Finding]:
    """Every threshold on its own, then the checks and the validity as in the headline."""
    out = []
    status = _status_finding(metrics)
    out.append(status or Finding("pass", "run completed"))
    for test, target, ok, detail in threshold_entries(metrics):
        out.append(Finding("pass" if ok else "fail", f"{test} on {target}: {detail}"))
    out += _consistency_findings(metrics)
    out += resilience_findings(metrics)
    out += http_clients_findings(metrics)
    out += clients_findings(metrics)
    v = metrics.get("validity")
    if isinstance(v, Mapping):
        n = len(v.get("flags") or [])
        st: Status = "pass" if v.get("valid", True) else "warn"
        out.append(Finding(st, "no figure flagged" if not n else f"{n} figure(s) flagged"))
    return out


def _left_open(metrics: Mapping[str, Any]) -> list[str]:
    out = []
    for f in _flags(metrics, SHORT_RUNTIME):
        out.append(f"{_where(f)}: {f.get('detail')}")
    cached = _flags(metrics, CACHED_WRITE)
    if cached:
        out.append(
            "the storage's write speed: "
            + ", ".join(_where(f) for f in cached)
            + " measured the page cache (use cache: direct or include_flush: true)"
        )
    for c in metrics.get("consistency", []):
        if isinstance(c, Mapping) and "ok" in c and c.get("ok") is None:
            out.append(f"{c.get('target')} {c.get('check')} not run: {c.get('detail', '')}")
    for e in metrics.get("cache_effects", []):
        if isinstance(e, Mapping) and e.get("cached"):
            out.append(f"{e.get('target')} reads: {e.get('statement')}")
    for t in metrics.get("targets", []):
        if isinstance(t, Mapping):
            out += [f"{t.get('name')}: {n}" for n in t.get("notes", [])]
    if run_state(metrics.get("status")) not in ("", COMPLETE):
        out.append(f"the run {run_state(metrics.get('status'))}: later tests were not measured")
    return out


# -- the rest ------------------------------------------------------------------------------


def _cache_statements(metrics: Mapping[str, Any]) -> Statements | None:
    effects = [e for e in metrics.get("cache_effects", []) if isinstance(e, Mapping)]
    if not effects:
        return None
    return Statements(
        id="cache-effects",
        title="Cache effects (re-read against read)",
        lines=tuple(
            ("warn" if e.get("cached") else "info", f"{e.get('target')}: {e.get('statement')}")
            for e in effects
        ),
    )


def _notes(metrics: Mapping[str, Any]) -> list[str]:
    """The terminal's lines under the headline: what the matrix is, the formula."""
    io = metrics.get("iozone", {}) if isinstance(metrics.get("iozone"), Mapping) else {}
    if not metrics.get("matrix"):  # no matrix ran (e.g. conformance or replay only)
        out = [f"{metrics.get('name')}: {metrics.get('repetitions')} repetitions"]
        return out + ([str(metrics.get("speedup_formula"))] if metrics.get("baseline") else [])
    out = [
        f"{metrics.get('name')}: iozone matrix, file {format_size(int(io.get('file_size') or 0))}, "
        f"record {format_size(int(io.get('record_size') or 0))}, close() in timing (-c; fio "
        f"always times it), flush {'in' if io.get('include_flush') else 'not in'} timing (-e); "
        f"{metrics.get('repetitions')} repetitions"
    ]
    if metrics.get("baseline"):
        out.append(str(metrics.get("speedup_formula")))
    return out
