"""The study's figure tables as typed :class:`~gridbench.sections.Table` sections: the
seed's Table 1 (per tool: success, time, failure, satisfied, difficult) and Table 2 (per
metric the tools' means and the comparison's p-value, tools in comparison pairs), SUS per
tool, every paired test in full, per-task figures and the power curve. Raw values go to
CSV/JSON, text to people. Pure functions of a checked ``gridbench.study/1`` document; a
table with nothing to show is None. The install survey, validity and the participants'
own words are in :mod:`gridbench.study.report_extras`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.sections import Column, Field, Shown, Table, listed, part, record_table, shown_table
from gridbench.study.report_format import (
    ALT_TEXT,
    METRIC_LABEL,
    METRIC_SHORT,
    MISSING,
    cell,
    fmt,
    fmt2,
    fmt_ci,
    fmt_p,
    label_of,
    metric_mean,
    num,
    table_id,
    tools,
)

# -- Table 1 ------------------------------------------------------------------------------

_TABLE1 = (
    ("success_rate", "Percentage of successful users", fmt2),
    ("satisfied_pct", "Percentage of users satisfied with tool", fmt2),
    ("difficult_pct", "Percentage of users who found tool difficult to use", fmt2),
    ("time_mean_s", "Mean task time (s)", fmt2),
    ("time_geomean_s", "Geometric mean task time (s)", fmt2),
    ("failure_mean", "Mean failure scale (1-5)", fmt2),
    ("n", "Participants", fmt),
)


def table1(metrics: Mapping[str, Any]) -> Table | None:
    """The seed's Table 1: one column per tool, one row per summary statistic."""
    ts = tools(metrics)
    if not ts:
        return None
    cols = [
        Column("result", "Result"),
        *(Column(table_id(k), label_of(metrics, k), numeric=True) for k in ts),
    ]
    rows: list[list[Any]] = []
    for key, label, f in _TABLE1:
        rows.append([label, *(cell(part(t, "tasks").get(key), f) for t in ts.values())])
    ci_row: list[Any] = ["Geometric mean 95% CI (s)"]
    for t in ts.values():
        ci = part(t, "tasks").get("time_geomean_ci95")
        ci_row.append(Shown(fmt_ci(ci), fmt_ci(ci)))
    rows.insert(5, ci_row)
    return shown_table(
        "table1",
        "Table 1: summary of the usability trials per tool",
        cols,
        rows,
        note="Successful users: % of the participants observed on every task who succeeded in "
        "all. Satisfied / difficult: % of task answers rating 4 or 5. Times: per participant "
        "the mean seconds per task, then the mean (or geometric mean) over participants.",
    )


# -- Table 2 ------------------------------------------------------------------------------


def _pairs(metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    return list(
        dict.fromkeys((str(c.get("a")), str(c.get("b"))) for c in listed(metrics, "comparisons"))
    )


def _test(
    metrics: Mapping[str, Any], pair: tuple[str, str], metric: str
) -> Mapping[str, Any] | None:
    return next(
        (
            c
            for c in listed(metrics, "comparisons")
            if (c.get("a"), c.get("b")) == pair and c.get("metric") == metric
        ),
        None,
    )


def _p_text(c: Mapping[str, Any]) -> str:
    if num(c.get("p")) is None:
        return "no test"
    text = f"p = {fmt_p(c.get('p'))}"
    if num(c.get("p_adjusted")) is not None and c.get("correction") != "none":
        text += f" (adj. {fmt_p(c.get('p_adjusted'))})"
    return text + (" *" if c.get("significant") is True else "")


def _t_text(c: Mapping[str, Any]) -> str:
    if num(c.get("t")) is None:
        return f"n = {c.get('n')}"
    return f"t({c.get('df')}) = {fmt(c.get('t'), 3)}, d_z = {fmt(c.get('dz'), 2)}"


def table2(metrics: Mapping[str, Any]) -> Table | None:
    """The seed's Table 2: per metric a row of the tools' means and a row of the
    comparison's p-value (under the first tool of each pair; t and d_z under the second),
    tools side by side in their comparison pairs."""
    pairs = _pairs(metrics)
    if not pairs:
        return None
    cols = [Column("row", "Metric")]
    for i, (a, b) in enumerate(pairs):
        cols += [
            Column(table_id(f"c{i}", a), label_of(metrics, a), numeric=True),
            Column(table_id(f"c{i}", b), label_of(metrics, b), numeric=True),
        ]
    # a metric nobody answered has nothing to show (its test is listed, and flagged)
    metrics_in = [
        m
        for m in METRIC_LABEL
        if any(_test(metrics, p, m) for p in pairs)
        and any(metric_mean(metrics, tool, m) is not None for p in pairs for tool in p)
    ]
    rows: list[list[Any]] = []
    styles: list[Any] = []
    for m in metrics_in:
        means: list[Any] = [METRIC_LABEL[m]]
        ps: list[Any] = [f"{METRIC_SHORT[m]} P-value"]
        for pair in pairs:
            c = _test(metrics, pair, m)
            for tool in pair:
                means.append(cell(metric_mean(metrics, tool, m)))
            if c is None:
                ps += [Shown(None, MISSING), Shown(None, "")]
                continue
            sig = c.get("significant") is True
            ps += [
                Shown(num(c.get("p")), _p_text(c), "pass" if sig else None),
                Shown(num(c.get("t")), _t_text(c)),
            ]
        rows += [means, ps]
        styles += ["group-start", None]
    return shown_table(
        "table2",
        "Table 2: mean scores and paired t-test P-values per metric",
        cols,
        rows,
        row_style=tuple(styles),
        note=f"Paired t-tests (scipy ttest_rel) in the direction of each comparison's "
        f"hypothesis; adj. = {metrics.get('correction') or 'holm'}-corrected across the "
        "comparison's metrics; * significant after correction. The P-value sits under the "
        "first tool of the pair, t(df) and the effect size d_z under the second.",
    )


def _ci_cell(c: Mapping[str, Any]) -> Shown:
    ci = c.get("dz_ci95")
    return Shown(fmt_ci(ci), fmt_ci(ci))


COMPARISONS: tuple[Field, ...] = (
    (Column("a", "a"), lambda c: str(c.get("a"))),
    (Column("b", "b"), lambda c: str(c.get("b"))),
    (Column("metric", "Metric"), lambda c: str(c.get("metric"))),
    (
        Column("alternative", "H1"),
        lambda c: Shown(c.get("alternative"), ALT_TEXT.get(str(c.get("alternative")), MISSING)),
    ),
    (Column("n", "Pairs", numeric=True), lambda c: cell(c.get("n"), fmt)),
    (Column("mean_a", "Mean a", numeric=True), lambda c: cell(c.get("mean_a"))),
    (Column("mean_b", "Mean b", numeric=True), lambda c: cell(c.get("mean_b"))),
    (Column("t", "t", numeric=True), lambda c: cell(c.get("t"), lambda x: fmt(x, 3))),
    (Column("df", "df", numeric=True), lambda c: cell(c.get("df"), fmt)),
    (Column("p", "p", numeric=True), lambda c: cell(c.get("p"), fmt_p)),
    (Column("p_adjusted", "p adjusted", numeric=True), lambda c: cell(c.get("p_adjusted"), fmt_p)),
    (
        Column("significant", "Significant"),
        lambda c: Shown(
            c.get("significant"),
            {True: "yes", False: "no"}.get(c.get("significant"), MISSING),
            "pass" if c.get("significant") is True else None,
        ),
    ),
    (Column("dz", "d_z", numeric=True), lambda c: cell(c.get("dz"), lambda x: fmt(x, 3))),
    (Column("dz_ci95", "d_z 95% CI"), _ci_cell),
)


def comparisons_table(metrics: Mapping[str, Any]) -> Table | None:
    """Every paired test in full: one row per comparison and metric."""
    return record_table(
        "comparisons",
        "Paired t-tests",
        listed(metrics, "comparisons"),
        COMPARISONS,
        note="t = mean(a - b) / (sd(a - b) / sqrt(n)), df = n - 1; d_z = mean(a - b) / "
        "sd(a - b), its 95% CI from the noncentral t. H1 follows the hypothesis: better is "
        "higher SUS and satisfaction, lower time, failure and difficulty.",
        scope="full",
    )


# -- SUS ----------------------------------------------------------------------------------


#: The columns both SUS tables begin with, and the cells of those columns.
_SUS_LEAD = (
    Column("tool", "Tool"),
    Column("n", "n", numeric=True),
    Column("mean", "Mean", numeric=True),
    Column("sd", "SD", numeric=True),
)
_GRADE, _ADJECTIVE = Column("grade", "Grade"), Column("adjective", "Adjective")


def _sus_lead(tool: str, s: Mapping[str, Any]) -> list[Any]:
    return [tool, cell(s.get("n"), fmt), cell(s.get("mean")), cell(s.get("sd"))]


def _word(s: Mapping[str, Any], key: str) -> Shown:
    return Shown(s.get(key), str(s.get(key) or MISSING))


def _sus_row(k: str, t: Mapping[str, Any]) -> list[Any]:
    s = part(t, "sus")
    return [
        *_sus_lead(str(t.get("title") or k), s),
        Shown(fmt_ci(s.get("ci95")), fmt_ci(s.get("ci95"))),
        Shown(
            fmt_ci(s.get("ci95_bca")),
            fmt_ci(s.get("ci95_bca"))
            if s.get("ci95_bca")
            else (MISSING if (num(s.get("n")) or 0) < 30 else "n ≥ 30"),
        ),
        _word(s, "grade"),
        cell(s.get("percentile"), lambda x: f"{fmt(x, 3)}" if num(x) is not None else MISSING),
        _word(s, "adjective"),
        cell(s.get("usability")),
        cell(s.get("learnability")),
        cell(s.get("alpha"), lambda x: fmt(x, 3)),
    ]


def sus_table(metrics: Mapping[str, Any]) -> Table | None:
    """SUS per tool: n, mean, sd, CIs, grade, percentile, adjective, subscales, alpha."""
    rows = [_sus_row(k, t) for k, t in tools(metrics).items() if part(t, "sus")]
    if not rows:
        return None
    cols = [
        *_SUS_LEAD,
        Column("ci95", "95% CI (t)"),
        Column("ci95_bca", "95% CI (BCa)"),
        _GRADE,
        Column("percentile", "Percentile", numeric=True),
        _ADJECTIVE,
        Column("usability", "Usability", numeric=True),
        Column("learnability", "Learnability", numeric=True),
        Column("alpha", "Cronbach's α", numeric=True),
    ]
    return shown_table(
        "sus",
        "System Usability Scale per tool",
        cols,
        rows,
        note="SUS = 2.5 × Σ(odd items − 1, 5 − even items). Grade: Sauro–Lewis curved scale "
        "(A+ ≥ 84.1 … F < 51.7); percentile against a normal benchmark of mean 68, SD 12.5 "
        "(68 = 50th); adjective: Bangor, Kortum & Miller 2009; usability (8 items × 3.125) "
        "and learnability (items 4 and 10 × 12.5) after Lewis & Sauro 2009. BCa: bootstrap "
        "interval (scipy, seeded) when n < 30.",
        scope="full",
    )


def sus_brief(metrics: Mapping[str, Any]) -> Table | None:
    """SUS per tool for the terminal: tool, n, mean, sd, CI, grade, adjective (the full
    table is the HTML report's and the export's)."""
    rows = []
    for k, t in tools(metrics).items():
        s = part(t, "sus")
        if not s:
            continue
        ci = s.get("ci95_bca") or s.get("ci95")
        rows.append(
            [
                *_sus_lead(label_of(metrics, k), s),
                Shown(fmt_ci(ci), fmt_ci(ci)),
                _word(s, "grade"),
                _word(s, "adjective"),
            ]
        )
    if not rows:
        return None
    cols = [*_SUS_LEAD, Column("ci95", "95% CI"), _GRADE, _ADJECTIVE]
    return shown_table(
        "sus-brief",
        "SUS per tool (95% CI: BCa when n < 30)",
        cols,
        rows,
        scope="brief",
        export=False,
    )


# -- per task -----------------------------------------------------------------------------


def task_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per tool and task: mean time, timed participants, success rate."""
    recs = [
        {"tool": str(t.get("title") or k), "task": task, **v}
        for k, t in tools(metrics).items()
        for task, v in part(part(t, "tasks"), "per_task").items()
        if isinstance(v, Mapping)
    ]
    fields: tuple[Field, ...] = (
        (Column("tool", "Tool"), lambda r: r["tool"]),
        (Column("task", "Task"), lambda r: str(r["task"])),
        (
            Column("time_mean_s", "Mean time (s)", numeric=True),
            lambda r: cell(r.get("time_mean_s")),
        ),
        (Column("n", "Timed", numeric=True), lambda r: cell(r.get("n"), fmt)),
        (
            Column("success_rate", "Success (%)", numeric=True),
            lambda r: cell(r.get("success_rate")),
        ),
    )
    return record_table("tasks", "Per task", recs, fields, scope="full", collapsed=True)


# -- power --------------------------------------------------------------------------------


def power_table(metrics: Mapping[str, Any]) -> Table | None:
    """Participants needed per effect size (the power curve at the study's settings)."""
    p = part(metrics, "power")
    curve = [c for c in p.get("curve") or [] if isinstance(c, Mapping)]
    fields: tuple[Field, ...] = (
        (
            Column("effect_size", "d_z", numeric=True),
            lambda r: cell(r.get("effect_size"), lambda x: fmt(x, 3)),
        ),
        (
            Column("n_required", "Participants needed", numeric=True),
            lambda r: cell(r.get("n_required"), fmt),
        ),
        (Column("label", "Note"), lambda r: str(r.get("label") or "")),
    )
    tails = "one" if p.get("tails") == 1 else "two"
    return record_table(
        "power",
        f"Participants a paired t-test needs (power {fmt(p.get('power'))}, "
        f"α {fmt(p.get('alpha'))}, {tails}-tailed)",
        curve,
        fields,
        scope="full",
    )
