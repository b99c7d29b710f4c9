"""The study's report as typed sections (:mod:`gridbench.sections`): the headline (each
comparison's SUS, grade and p-value; the hypotheses that held or not; the cohort against
the power analysis; validity flags), the evaluation summary, the seed's Tables 1 and 2,
SUS per tool, the power analysis stated in words, the install survey and the charts. The
generic renderers (terminal, HTML, CSV/JSON, dashboard) draw it.

**Free text.** Participants' free text, background answers and the install complaints'
text are shown as given (sections carry plain text; every renderer escapes it). With
``free_text=False``, or ``"report_free_text": false`` in the run's experiment.json (what
the generic ``gridbench report`` and the dashboard then follow), they are left out of every
section *and* of the metrics carried into report.json (:func:`without_free_text`), so an
export can be shared without them. metrics.json keeps them: it is the run's record.

One public entry, :func:`build_report`; the tables are in
:mod:`gridbench.study.report_tables` and :mod:`gridbench.study.report_extras`, the charts
in :mod:`gridbench.study.report_charts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from gridbench.sections import (
    Finding,
    Report,
    Section,
    Status,
    listed,
    part,
)
from gridbench.states import COMPLETE, RUNNING, run_state
from gridbench.study.report_charts import charts
from gridbench.study.report_extras import (
    background_table,
    category_tables,
    complaints_table,
    free_text_table,
    install_table,
    notes_section,
    power_statements,
    trend_statements,
    validity_table,
)
from gridbench.study.report_format import (
    METRIC_SHORT,
    fmt,
    fmt_p,
    num,
    title_of,
    tools,
)
from gridbench.study.report_tables import (
    comparisons_table,
    power_table,
    sus_brief,
    sus_table,
    table1,
    table2,
    task_table,
)
from gridbench.testplan import Configured, Masthead, Story, family_report, run_span

__all__ = ["build_report", "without_free_text"]

#: experiment.json's switch: ``false`` leaves free text out of every report of the run.
FREE_TEXT_KEY = "report_free_text"
#: Statuses of a study whose data are all in (an import is "complete" once read).
DONE = (COMPLETE, "")  # run_state: "" when none is recorded, old words read as today's


def without_free_text(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``metrics`` without the participants' own words: free text, background
    answers and the install complaints' text (their counts stay)."""
    out = {k: v for k, v in metrics.items() if k not in ("free_text", "background")}
    survey = metrics.get("install_survey")
    if isinstance(survey, Mapping):
        groups = [
            {k: v for k, v in g.items() if k != "texts"}
            for g in survey.get("complaints") or []
            if isinstance(g, Mapping)
        ]
        out["install_survey"] = {**survey, "complaints": groups}
    return out


def build_report(
    metrics: Mapping[str, Any],
    *,
    free_text: bool | None = None,
    **configured: Unpack[Configured],
) -> Report:
    """The report of a study run's checked ``metrics.json`` (``gridbench.study/1``).

    ``spec_yaml`` and ``plan`` go to "how it was configured", ``not_tested`` to what is
    left open, ``experiment`` (experiment.json) adds when the study ran. ``free_text``
    False drops the participants' own words from the report and its exports; None (the
    default) follows experiment.json's ``report_free_text`` (false drops them)."""
    name = str(metrics.get("name") or "study")
    exp = configured.get("experiment") or {}
    if free_text is None:
        free_text = exp.get(FREE_TEXT_KEY) is not False
    story = Story(_findings(metrics), _tested(metrics, exp), _outcome(metrics), _left_open(metrics))
    sections: list[Section | None] = [
        power_statements(metrics),
        table1(metrics),
        table2(metrics),
        sus_table(metrics),
        sus_brief(metrics),
        comparisons_table(metrics),
        task_table(metrics),
        power_table(metrics),
        install_table(metrics),
        *category_tables(metrics),
        trend_statements(metrics),
        complaints_table(metrics, with_text=free_text),
        validity_table(metrics),
        free_text_table(metrics) if free_text else None,
        background_table(metrics) if free_text else None,
        notes_section(metrics, free_text),
        *charts(metrics),
    ]
    meta = f"{metrics.get('schema')} · {_people(metrics)}"
    return family_report(
        Masthead("study", name, "usability study", meta),
        story,
        configured,
        sections,
        data=dict(metrics) if free_text else without_free_text(metrics),
    )


def _people(metrics: Mapping[str, Any]) -> str:
    p = part(metrics, "participants")
    return (
        f"{p.get('with_data', 0)} participant(s) with data of {p.get('declared', 0)} declared, "
        f"{p.get('finished', 0)} finished · {metrics.get('delivery') or 'unknown'} delivery"
    )


# -- the headline --------------------------------------------------------------------------


def _sus_text(metrics: Mapping[str, Any], tool: str) -> str:
    s = part(tools(metrics).get(tool, {}), "sus")
    if num(s.get("mean")) is None:
        return f"{title_of(metrics, tool)} SUS –"
    return f"{title_of(metrics, tool)} SUS {float(s['mean']):.1f} ({s.get('grade')})"


def _named(tests: Sequence[Mapping[str, Any]], significant: bool | None) -> list[str]:
    """The metrics of ``tests`` whose ``significant`` is the given one (None: untested)."""
    return [
        METRIC_SHORT.get(str(c.get("metric")), str(c.get("metric")))
        for c in tests
        if c.get("significant") is significant
    ]


def _comparison_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    out = []
    pairs = list(
        dict.fromkeys(
            (str(c.get("a")), str(c.get("b")), str(c.get("better")))
            for c in listed(metrics, "comparisons")
        )
    )
    for a, b, better in pairs:
        tests = [c for c in listed(metrics, "comparisons") if (c.get("a"), c.get("b")) == (a, b)]
        # SUS leads; without a SUS test, the first metric that was tested
        lead = next(
            (c for c in tests if c.get("metric") == "sus" and num(c.get("p")) is not None), None
        )
        lead = lead or next((c for c in tests if num(c.get("p")) is not None), None)
        if lead is not None and lead.get("metric") == "sus":
            head = f"{_sus_text(metrics, a)} vs {_sus_text(metrics, b)}: {_p_text(lead)}"
        elif lead is not None:
            head = (
                f"{title_of(metrics, a)} vs {title_of(metrics, b)}: "
                f"{METRIC_SHORT.get(str(lead.get('metric')), '')} {_p_text(lead)}"
            )
        else:
            head = f"{_sus_text(metrics, a)} vs {_sus_text(metrics, b)}: no test"

        held, not_held, untested = (_named(tests, want) for want in (True, False, None))
        winner = {"a": a, "b": b}.get(better)
        claim = f"{title_of(metrics, winner)} better" if winner else "a difference (two-sided)"
        evidence = f"hypothesis {claim}: significant on {', '.join(held) or 'no metric'}"
        if not_held:
            evidence += f"; not on {', '.join(not_held)}"
        if untested:
            evidence += f"; not tested: {', '.join(untested)}"
        status: Status = (
            "pass" if held and not not_held else ("fail" if not_held and not held else "warn")
        )
        out.append(Finding(status, head, evidence))
    return out


def _sus_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    out = []
    for k, t in tools(metrics).items():
        s = part(t, "sus")
        if num(s.get("mean")) is None:
            continue
        out.append(
            Finding(
                "info",
                f"{_sus_text(metrics, k)}, SD {fmt(s.get('sd'), 3)}, n = {s.get('n')}: "
                f"{s.get('adjective')}, percentile {fmt(s.get('percentile'), 2)}",
            )
        )
    return out


def _power_finding(metrics: Mapping[str, Any]) -> Finding | None:
    p = part(metrics, "power")
    need = p.get("n_required")
    if need is None:
        return None
    ok = p.get("enough") is True
    return Finding(
        "pass" if ok else "warn",
        f"cohort: {p.get('n_have')} complete pairs, the power analysis asks for {need} "
        f"(d_z {fmt(p.get('effect_size'), 2)}, {p.get('effect_from')})",
    )


def _status_finding(metrics: Mapping[str, Any]) -> Finding | None:
    status = run_state(metrics.get("status"))
    if status in DONE:
        return None
    if status == RUNNING:
        return Finding("warn", "the study is still open (status running): figures are partial")
    return Finding("fail", f"study {status}")


def _validity_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    return [
        Finding("warn", f"{f.get('rule')}: {f.get('at')}", str(f.get("detail") or ""))
        for f in listed(part(metrics, "validity"), "flags")
        if f.get("rule") != "small_cohort"  # stated by the power finding
    ]


def _findings(metrics: Mapping[str, Any]) -> list[Finding]:
    comparisons = _comparison_findings(metrics)
    found = [
        _status_finding(metrics),
        *comparisons,
        *([] if comparisons else _sus_findings(metrics)),
        _power_finding(metrics),
        *_validity_findings(metrics),
    ]
    out = [f for f in found if f is not None]
    if not part(metrics, "participants").get("with_data"):
        out.insert(0, Finding("warn", "no participant has answered yet"))
    if not out:
        out.append(Finding("info", "no comparison was declared"))
    return out


# -- the evaluation summary ----------------------------------------------------------------


def _tested(metrics: Mapping[str, Any], exp: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = [("study", str(metrics.get("name")))]
    ts = tools(metrics)
    out.append(("tools", "; ".join(str(t.get("title") or k) for k, t in ts.items()) or "none"))
    out.append(("participants", _people(metrics)))
    pairs = dict.fromkeys(
        f"{c.get('a')} vs {c.get('b')} ("
        + (f"{c.get(str(c.get('better')))} better" if c.get("better") in ("a", "b") else "either")
        + ")"
        for c in listed(metrics, "comparisons")
    )
    out.append(("comparisons", "; ".join(pairs) or "none declared"))
    p = part(metrics, "power")
    out.append(
        (
            "statistics",
            f"paired t-tests, {'one' if p.get('tails') == 1 else 'two'}-tailed, α "
            f"{fmt(p.get('alpha'))}, {metrics.get('correction') or 'holm'} correction across "
            f"each comparison's metrics; power {fmt(p.get('power'))}",
        )
    )
    return out + run_span(exp)


def _outcome(metrics: Mapping[str, Any]) -> list[Finding]:
    out = [_status_finding(metrics) or Finding("pass", "study data analysed")]
    for c in listed(metrics, "comparisons"):
        if num(c.get("p")) is None:
            continue
        sig = c.get("significant") is True
        out.append(
            Finding(
                "pass" if sig else "fail",
                f"{c.get('a')} vs {c.get('b')}, {c.get('metric')}: t({c.get('df')}) = "
                f"{fmt(c.get('t'), 3)}, p = {fmt_p(c.get('p'))}, adjusted "
                f"{fmt_p(c.get('p_adjusted'))} ({'significant' if sig else 'not significant'})",
            )
        )
    flags = listed(part(metrics, "validity"), "flags")
    out.append(
        Finding(
            "warn" if flags else "pass",
            f"{len(flags)} validity flag(s)" if flags else "no validity flag",
        )
    )
    return out


def _left_open(metrics: Mapping[str, Any]) -> list[str]:
    out = []
    p = part(metrics, "power")
    if p.get("enough") is False:
        out.append(
            f"the cohort ({p.get('n_have')}) is below the {p.get('n_required')} the power "
            "analysis asks for: a non-significant result does not show the tools are alike"
        )
    for c in listed(metrics, "comparisons"):
        if num(c.get("p")) is None:
            out.append(
                f"{c.get('a')} vs {c.get('b')}, {c.get('metric')}: not tested "
                f"({c.get('n')} pair(s))"
            )
    if run_state(metrics.get("status")) not in DONE:
        out.append(f"the study is {metrics.get('status')}: later answers are not in these figures")
    return out


def _p_text(test: Mapping[str, Any]) -> str:
    """'p = 0.0101 (adjusted 0.0304)': the verdict follows the adjusted p, so it is shown."""
    p, adj = test.get("p"), test.get("p_adjusted")
    text = f"p = {fmt_p(p)}"
    if num(adj) is not None and adj != p:
        text += f" (adjusted {fmt_p(adj)})"
    return text
