"""net's report as typed sections (:mod:`gridbench.sections`): the headline (the run's
status, thresholds, every overhead above the network's floor named, the growth fits,
failures and flagged figures, each stated once), the evaluation summary and every net
table and chart. The generic renderers (terminal, HTML, CSV/JSON, dashboard) draw it.

One public entry, :func:`build_report`; the tables are in
:mod:`gridbench.messaging.report_tables` and :mod:`gridbench.messaging.report_checks`,
the charts in :mod:`gridbench.messaging.report_charts`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Unpack

from gridbench.hosts.sampling.compared import CLIENT_BOUND, client_bound_finding
from gridbench.messaging.overheads import env_phrase, size_text
from gridbench.messaging.report_charts import charts
from gridbench.messaging.report_checks import check_tables, overhead_table
from gridbench.messaging.report_rr import findings as rr_findings
from gridbench.messaging.report_rr import sections as rr_sections
from gridbench.messaging.report_tables import figure_tables, fmt4
from gridbench.messaging.validity import BELOW_FLOOR, FEW_SAMPLES, NET_VALIDITY_RULES
from gridbench.sections import (
    Finding,
    Report,
    Section,
    Statements,
    Status,
    listed,
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

__all__ = ["build_report"]

#: Overheads named one by one in the headline; the rest are counted (all are in a table).
HEADLINE_OVERHEADS = 5
_PATTERNS = ("pingpong", "echo", "echo_scaling", "burst", "transfer")


def build_report(metrics: Mapping[str, Any], **configured: Unpack[Configured]) -> Report:
    """The report of a net run's checked ``metrics.json`` (``gridbench.net/1``).

    ``spec_yaml`` and ``plan`` go to "how it was configured", ``not_tested`` to what is
    left open, ``experiment`` (experiment.json) adds when the run started and ended."""
    name = str(metrics.get("name") or "net")
    exp = configured.get("experiment") or {}
    story = Story(_findings(metrics), _tested(metrics, exp), _outcome(metrics), _left_open(metrics))
    sections: list[Section | None] = [
        _fit_statements(metrics),
        overhead_table(metrics),
        *figure_tables(metrics),
        *rr_sections(metrics),
        *check_tables(metrics),
        _notes_section(metrics),
        *charts(metrics),
    ]
    meta = f"{metrics.get('schema')} · floor factor {fmt4(metrics.get('floor_factor'))}×"
    return family_report(
        Masthead("net", name, "messaging benchmark", meta),
        story,
        configured,
        sections,
        notes=(str(metrics.get("formulas") or ""), str(metrics.get("precision") or "")),
        data=metrics,
    )


def _flags(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    v = metrics.get("validity")
    return listed(v, "flags") if isinstance(v, Mapping) else []


# -- the headline --------------------------------------------------------------------------


def _status_finding(metrics: Mapping[str, Any]) -> Finding | None:
    status = run_state(metrics.get("status"))
    if status == COMPLETE:
        return None
    error = f": {metrics.get('error')}" if metrics.get("error") else ""
    if status == "running":
        return Finding(
            "warn", f"the run has not finished (status running){error}: figures are partial"
        )
    return Finding("fail", f"run {status}{error}")


def _threshold_finding(metrics: Mapping[str, Any]) -> Finding | None:
    ths = listed(metrics, "thresholds")
    failed = [
        f"{t.get('metric')} {t.get('op')} {t.get('value')}: "
        + (str(t.get("reason")) if t.get("reason") else f"{fmt4(t.get('actual'))}")
        for t in ths
        if t.get("passed") is not True
    ]
    return thresholds_finding(len(ths), failed)


def _series_of(o: Mapping[str, Any]) -> tuple[str, ...]:
    """The series an overhead or flag belongs to: one headline line per series."""
    return tuple(
        str(o.get(k) or "")
        for k in ("pattern", "transport", "tool", "name", "config", "direction", "env")
    )


def _grouped(items: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for o in items:
        groups.setdefault(_series_of(o), []).append(o)
    return list(groups.values())


def _overhead_line(group: list[Mapping[str, Any]]) -> str:
    worst = max(group, key=lambda o: float(o.get("ratio") or 0.0))
    if len(group) == 1:
        return str(worst.get("statement"))
    return f"{len(group)} figures of one series, the worst: {worst.get('statement')}"


def _overhead_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    found = listed(metrics, "overheads")
    factor = fmt4(metrics.get("floor_factor"))
    # one line per series (a transport in an environment), worst series first
    groups = sorted(_grouped(found), key=lambda g: -max(float(o.get("ratio") or 0.0) for o in g))
    out = [
        Finding("warn", f"overhead above the network: {_overhead_line(g)}")
        for g in groups[:HEADLINE_OVERHEADS]
    ]
    if len(groups) > HEADLINE_OVERHEADS:
        rest = groups[HEADLINE_OVERHEADS:]
        out.append(
            Finding(
                "warn",
                f"{len(rest)} more series with figures above {factor}× the floor (table Overheads)",
                "; ".join(_overhead_line(g) for g in rest),
            )
        )
    has_floor = any(f.get("sockperf") or f.get("iperf3") for f in listed(metrics, "floor"))
    if not found and has_floor:
        out.append(Finding("pass", f"no figure more than {factor}× the network's floor"))
    return out


def _fit_lines(metrics: Mapping[str, Any]) -> list[str]:
    out = []
    for s in listed(metrics, "echo_scaling"):
        fit = s.get("fit")
        if isinstance(fit, Mapping) and fit.get("statement"):
            who = f"{s.get('transport')} echo ({s.get('config')}) {env_phrase(str(s.get('env')))}"
            out.append(f"{who}: {fit['statement']} (x = clients)")
        sat = s.get("saturation")
        if isinstance(sat, Mapping) and sat.get("statement"):
            who = f"{s.get('transport')} echo ({s.get('config')}) {env_phrase(str(s.get('env')))}"
            out.append(f"{who}: {sat['statement']}")
    return out


def _validity_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    by: dict[str, list[Mapping[str, Any]]] = {}
    for f in _flags(metrics):
        if f.get("rule") != CLIENT_BOUND:  # said on its own line, below
            by.setdefault(str(f.get("rule")), []).append(f)
    words = {
        "failed_tests": "with failed tests or repetitions",
        "no_floor": "environment(s) with figures left without a floor (it could not be measured)",
        "incomplete_burst": "burst(s) missing responses",
        "below_floor": "figure(s) better than the network's floor: the comparison is void",
        "other_path": "figure(s) measured on another path than their floor: not compared",
    }
    out = []
    for rule, flags in by.items():
        where = "; ".join(
            f"{g[0].get('name')} {env_phrase(str(g[0].get('env')))}, "
            + (
                f"{g[0].get('at')}: {g[0].get('detail')}"
                if len(g) == 1
                else f"{len(g)} figures ({', '.join(str(f.get('at')) for f in g)}): "
                f"{g[0].get('detail')}"
            )
            for g in _grouped(flags)
        )
        text = (
            f"{len(flags)} {'figure(s) ' if rule == 'failed_tests' else ''}{words.get(rule, rule)}"
        )
        # a figure better than the network's floor voids the comparison: ranked with the
        # failures, never behind "--verbose" (issue 41)
        out.append(Finding("warn", text, where, problem=rule == BELOW_FLOOR))
    if (bound := client_bound_finding(metrics)) is not None:
        out.append(bound)
    return out


def _findings(metrics: Mapping[str, Any]) -> list[Finding]:
    found = [
        _status_finding(metrics),
        _threshold_finding(metrics),
        *_overhead_findings(metrics),
        *(Finding("info", line) for line in _fit_lines(metrics)),
        *_validity_findings(metrics),
        *rr_findings(metrics),
    ]
    out = [f for f in found if f is not None]
    if not any(listed(metrics, p) for p in _PATTERNS) and not metrics.get("rr"):
        out.append(Finding("warn", "no messaging figure was recorded"))
    if not any(f.status != "info" for f in out):
        out.insert(0, Finding("pass", "run completed; no thresholds were declared"))
    return out


# -- the evaluation summary ----------------------------------------------------------------


def _names(metrics: Mapping[str, Any], pattern: str, key: str) -> str:
    return ", ".join(dict.fromkeys(str(s.get(key)) for s in listed(metrics, pattern)))


def _tested(metrics: Mapping[str, Any], exp: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = [("experiment", str(metrics.get("name")))]
    envs = [str(e) for e in metrics.get("environments") or []]
    out.append(("environments", ", ".join(envs) or "not recorded"))
    pp = listed(metrics, "pingpong")
    if pp:
        sizes = sorted({int(r["size_bytes"]) for s in pp for r in s["rows"]})
        tests = exp.get("pingpong_tests")
        trips = exp.get("pingpong_round_trips")
        out.append(
            (
                "ping-pong",
                f"{_names(metrics, 'pingpong', 'transport')}; sizes {size_text(sizes[0])} to "
                f"{size_text(sizes[-1])} ({len(sizes)}); {tests} tests × {trips} round trips",
            )
        )
    if listed(metrics, "echo"):
        configs = _names(metrics, "echo", "config")
        out.append(
            (
                "echo",
                f"{_names(metrics, 'echo', 'transport')} ({configs}); payload "
                f"{size_text(int(metrics.get('echo_payload') or 0))}",
            )
        )
    if listed(metrics, "echo_scaling"):
        clients = sorted(
            {int(p["clients"]) for s in listed(metrics, "echo_scaling") for p in s["points"]}
        )
        out.append(("client scaling", ", ".join(map(str, clients)) + " clients"))
    if listed(metrics, "burst"):
        out.append(
            (
                "burst",
                "; ".join(
                    f"{b['transport']}: {b.get('calls')} calls" for b in listed(metrics, "burst")
                ),
            )
        )
    if listed(metrics, "transfer"):
        out.append(("transfers", _names(metrics, "transfer", "tool")))
    tools = sorted(
        {t for f in listed(metrics, "floor") for t in ("sockperf", "iperf3") if f.get(t)}
    )
    out.append(
        (
            "floor",
            f"{', '.join(tools) or 'none measured'}; overhead above "
            f"{fmt4(metrics.get('floor_factor'))}× the floor",
        )
    )
    return out + run_span(exp)


def _outcome(metrics: Mapping[str, Any]) -> list[Finding]:
    out = [_status_finding(metrics) or Finding("pass", "run completed")]
    for t in listed(metrics, "thresholds"):
        ok = t.get("passed") is True
        detail = f"{t.get('metric')} {t.get('op')} {t.get('value')}: actual {fmt4(t.get('actual'))}"
        if t.get("reason"):
            detail += f" ({t.get('reason')})"
        out.append(Finding("pass" if ok else "fail", detail))
    n = len(listed(metrics, "overheads"))
    out.append(Finding("warn" if n else "pass", f"{n} figure(s) above the floor factor"))
    flags = _flags(metrics)
    out.append(
        Finding(
            "warn" if flags else "pass",
            f"{len(flags)} figure(s) flagged" if flags else "no figure flagged",
        )
    )
    return out


def _left_open(metrics: Mapping[str, Any]) -> list[str]:
    out = []
    for f in _flags(metrics):
        if f.get("rule") == "no_floor":
            out.append(f"figures {env_phrase(str(f.get('env')))}: {f.get('detail')}")
    floor_envs = {
        str(f.get("env")) for f in listed(metrics, "floor") if f.get("sockperf") or f.get("iperf3")
    }
    used = {str(s.get("env")) for p in ("pingpong", "echo", "transfer") for s in listed(metrics, p)}
    for env in sorted(used - floor_envs):
        out.append(f"no floor was measured {env_phrase(env)}: its figures have no ratio")
    v = metrics.get("validity")
    withheld = listed(v, "withheld") if isinstance(v, Mapping) else []
    if withheld:
        counts = Counter(p for w in withheld for p in w.get("percentiles") or [])
        out.append(
            f"percentiles withheld for want of samples ({FEW_SAMPLES}): "
            + ", ".join(f"{p} in {n} place(s)" for p, n in counts.items())
            + " — raise pingpong.tests × round_trips or echo repetitions"
        )
    if run_state(metrics.get("status")) != COMPLETE:
        out.append(f"the run {run_state(metrics.get('status'))}: later steps were not measured")
    return out


# -- statements ----------------------------------------------------------------------------


def _fit_statements(metrics: Mapping[str, Any]) -> Statements | None:
    """Each growth fit with how well it fits (the headline states the curve)."""
    lines: list[tuple[Status, str]] = []
    for s in listed(metrics, "echo_scaling"):
        fit = s.get("fit")
        if not isinstance(fit, Mapping) or not fit.get("statement"):
            continue
        who = f"{s.get('transport')} echo ({s.get('config')}) {env_phrase(str(s.get('env')))}"
        lines.append(
            (
                "info",
                f"{who}: {fit.get('form')} ({fit.get('model')}) over {fit.get('n')} client "
                f"counts, R² {fmt4(fit.get('r2'))}",
            )
        )
    if not lines:
        return None
    return Statements(
        id="growth",
        title="Growth fits: mean latency against clients (constant, linear, n·ln n or "
        "quadratic, chosen by AIC)",
        lines=tuple(lines),
        scope="full",
    )


def _notes_section(metrics: Mapping[str, Any]) -> Statements | None:
    notes = [str(n) for n in metrics.get("notes") or []]
    rules = [f"{r.name}: {r.description}" for r in NET_VALIDITY_RULES]
    lines: list[tuple[Status, str]] = [("info", n) for n in notes]
    lines += [("info", r) for r in rules]
    return Statements(
        id="notes", title="Notes and validity rules", lines=tuple(lines), scope="full"
    )
