"""The study report: headline, the seed's Tables 1 and 2, SUS, power, install survey,
charts; rendered by the generic renderers (terminal, HTML, CSV/JSON) with free text
escaped, and without free text when asked."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gridbench.errors import ResultsError
from gridbench.report import render_page, render_report, write_reports
from gridbench.sections import Report, Table
from gridbench.store.layout import RunDir, write_json
from gridbench.study import records as rec
from gridbench.study.family import FAMILY
from gridbench.study.report import build_report, without_free_text
from gridbench.testplan import report_inputs
from test_study_analysis import PEOPLE, make_run, sample_records, spec_data

HOSTILE = "<script>alert(1)</script>"


def _survey_records() -> list[rec.Record]:
    out: list[rec.Record] = []
    for rel, base in (("1.0", 2), ("2.0", 4)):
        for who in ("s1", "s2"):
            for item in ("install", "docs"):
                out.append(
                    rec.InstallRating(
                        t_ns=1, source="admin", release=rel, respondent=who, item=item, value=base
                    )
                )
    out.append(
        rec.Complaint(t_ns=1, source="admin", release="1.0", text=f"install failed {HOSTILE}")
    )
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, dict[str, Any], Report]:
    recs = sample_records()
    recs.append(rec.FreeText(t_ns=2, participant="P01", answers={"comments": HOSTILE}))
    data = spec_data(install_survey={"items": ["install", "docs"], "releases": ["1.0", "2.0"]})
    data["plan"] = {"items": ["AHE GUI", "UNICORE GUI"], "not_tested": ["installing the GUIs"]}
    run = make_run(tmp_path_factory.mktemp("studyreport"), recs + _survey_records(), data)
    metrics = FAMILY.analyze(run)
    return run, metrics, FAMILY.report(run, metrics)


def _table(report: Report, id: str) -> Table:
    return next(t for t in report.tables() if t.id == id)


def _terminal(report: Report) -> str:
    console = Console(record=True, width=240, color_system=None)
    render_report(report, console, verbose=True)
    return console.export_text()


def test_headline_states_the_comparison(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, m, report = built
    first = report.headline.findings[0]
    ahe, uni = m["tools"]["ahe_gui"]["sus"], m["tools"]["unicore_gui"]["sus"]
    sus = next(c for c in m["comparisons"] if c["metric"] == "sus")
    assert sus["p_adjusted"] > sus["p"]  # Holm over the metrics
    assert first.text == (
        f"AHE GUI SUS {ahe['mean']:.1f} ({ahe['grade']}) vs UNICORE GUI SUS "
        f"{uni['mean']:.1f} ({uni['grade']}): p = {sus['p']:.3e} "
        f"(adjusted {sus['p_adjusted']:.3e})"
    )
    assert first.status == "pass"  # every metric significant in the hypothesised direction
    assert "hypothesis AHE GUI better" in first.evidence


def test_table1_layout(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, m, report = built
    t = _table(report, "table1")
    assert [c.title for c in t.columns] == ["Result", "AHE GUI", "UNICORE GUI"]
    labels = [r[0] for r in t.rows]
    assert labels[:3] == [
        "Percentage of successful users",
        "Percentage of users satisfied with tool",
        "Percentage of users who found tool difficult to use",
    ]
    row = dict(zip(labels, t.rows, strict=True))
    assert (
        row["Percentage of successful users"][1] == m["tools"]["ahe_gui"]["tasks"]["success_rate"]
    )
    assert row["Mean task time (s)"][2] == m["tools"]["unicore_gui"]["tasks"]["time_mean_s"]


def test_table2_layout(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, m, report = built
    t = _table(report, "table2")
    assert [c.title for c in t.columns] == ["Metric", "AHE GUI", "UNICORE GUI"]
    labels = [r[0] for r in t.rows]
    assert labels == [
        "Mean SUS score (100 = most usable)",
        "SUS score P-value",
        "Mean task time (seconds)",
        "Mean task time P-value",
        "Mean failure rate (5 = most failure prone)",
        "Failure rate P-value",
        "Mean perceived difficulty (5 = most difficult)",
        "Perceived difficulty P-value",
        "Mean satisfaction (5 = most satisfied)",
        "Satisfaction P-value",
    ]
    tests = {c["metric"]: c for c in m["comparisons"]}
    assert t.rows[0][1:] == (
        m["tools"]["ahe_gui"]["sus"]["mean"],
        m["tools"]["unicore_gui"]["sus"]["mean"],
    )
    assert t.rows[1][1] == tests["sus"]["p"] and t.rows[1][2] == tests["sus"]["t"]
    assert t.rows[3][1] == tests["time"]["p"]
    assert t.text is not None and t.text[1][1].endswith("*")
    assert t.text[1][2].startswith(f"t({tests['sus']['df']}) = ")


def test_sus_and_power_sections(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, m, report = built
    sus = _table(report, "sus").records()
    assert [r["tool"] for r in sus] == ["AHE GUI", "UNICORE GUI"]
    assert sus[0]["mean"] == m["tools"]["ahe_gui"]["sus"]["mean"]
    assert sus[0]["grade"] == m["tools"]["ahe_gui"]["sus"]["grade"]
    power = next(s for s in report.sections if s.id == "power-analysis")
    text = " ".join(line for _, line in power.lines)  # type: ignore[union-attr]
    assert "seed's minimum of 27" in text and "d_z = 0.491" in text
    assert f"needs {m['power']['n_required']} participants" in text
    curve = _table(report, "power").records()
    seed_row = next(r for r in curve if "seed" in str(r["label"]))
    assert seed_row["n_required"] == 27


def test_install_survey_sections(built: tuple[RunDir, dict[str, Any], Report]) -> None:
    _, _, report = built
    rows = {r["item"]: r for r in _table(report, "install-survey").records()}
    assert rows["overall"]["r-1-0"] == 2.0 and rows["overall"]["r-2-0"] == 4.0
    trend = next(s for s in report.sections if s.id == "install-trend-text")
    assert "2.00 (1.0) → 4.00 (2.0)" in trend.lines[0][1]  # type: ignore[union-attr]
    assert {c.id for c in report.charts()} == {
        "sus-grades",
        "task-times",
        "likert-satisfaction",
        "likert-difficulty",
        "install-trend",
    }


def test_renders_everywhere_with_free_text_escaped(
    built: tuple[RunDir, dict[str, Any], Report],
) -> None:
    run, _, report = built
    text = _terminal(report)
    assert "Table 1: summary of the usability trials per tool" in text
    assert "SUS score P-value" in text
    page = render_page(report)
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Free text" in page and "Power analysis" in page
    paths = write_reports(run.path, report)
    assert paths
    with (run.path / "tables" / "table2.csv").open() as fh:
        assert next(csv.reader(fh))[0] == "row"
    doc = json.loads((run.path / "report.json").read_text())
    assert any(HOSTILE in r.get("text", "") for r in doc["metrics"]["free_text"])


def test_free_text_can_be_dropped(
    tmp_path: Path, built: tuple[RunDir, dict[str, Any], Report]
) -> None:
    run, m, _ = built
    report = build_report(m, **report_inputs(run), free_text=False)
    ids = {t.id for t in report.tables()}
    assert "free-text" not in ids and "background" not in ids
    assert "complaints" in ids
    assert [c.key for c in _table(report, "complaints").columns] == ["release", "topic", "count"]
    assert "free_text" not in report.data and "background" not in report.data
    out = tmp_path / "out"
    out.mkdir()
    write_reports(out, report)
    everything = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "alert(1)" not in everything and "liked AHE" not in everything
    assert "free_text" not in without_free_text(m)
    assert m["free_text"]  # the original is untouched


def test_family_report_checks_metrics(tmp_path: Path) -> None:
    run = make_run(tmp_path, sample_records(PEOPLE[:3]), spec_data(participants=PEOPLE[:3]))
    m = FAMILY.analyze(run)
    bad = {**m, "power": {"n_required": "27"}}
    write_json(run.metrics_file, bad)
    with pytest.raises(ResultsError) as err:
        FAMILY.report(run, bad)
    assert "power.n_required" in str(err.value)


def test_a_study_without_answers_reports(tmp_path: Path) -> None:
    run = make_run(tmp_path, [], spec_data())
    m = FAMILY.analyze(run)
    assert m["participants"]["with_data"] == 0
    assert all(c["p"] is None for c in m["comparisons"])
    report = FAMILY.report(run, m)
    assert report.headline.findings[0].text == "no participant has answered yet"
    render_page(report)
    _terminal(report)
    assert FAMILY.verdict(m)


SEED_TOOLS = ("Globus", "AHE CLI", "UNICORE", "AHE GUI", "AHE Cert", "AHE ACD")
SEED_PAIRS = (("AHE CLI", "Globus"), ("AHE GUI", "UNICORE"), ("AHE ACD", "AHE Cert"))


def _slug(title: str) -> str:
    return title.lower().replace(" ", "_")


def test_table2_with_the_seeds_three_comparisons() -> None:
    import numpy as np
    from scipy import stats as sst

    from gridbench.study.analysis import analyze
    from gridbench.study.model import StudySpec
    from gridbench.study.report_tables import table2

    task = [{"id": "run", "title": "Run", "instructions": "Run it."}]
    spec = StudySpec.model_validate(
        {
            "name": "seed",
            "purpose": "p",
            "tools": [{"id": _slug(t), "title": t, "tasks": task} for t in SEED_TOOLS],
            "comparisons": [{"a": _slug(a), "b": _slug(b)} for a, b in SEED_PAIRS],
            "analysis": {"bootstrap_resamples": 200},
            "questionnaires": {"likert": False, "failure_scale": False},
        }
    )
    rng = np.random.default_rng(33)
    recs: list[rec.Record] = []
    sus_of: dict[tuple[str, str], float] = {}
    for i in range(10):
        p = f"P{i}"
        for j, title in enumerate(SEED_TOOLS):
            tool, good = _slug(title), j % 2 == 1  # the AHE side of each pair
            items = [int(x) for x in rng.integers(1, 6, 10)]
            if good:  # nudge towards agreement with the positive items
                items = [
                    min(5, x + 1) if k % 2 == 0 else max(1, x - 1) for k, x in enumerate(items)
                ]
            sus_of[(p, tool)] = 2.5 * sum(
                (x - 1) if k % 2 == 0 else (5 - x) for k, x in enumerate(items)
            )
            recs.append(
                rec.SusAnswer(t_ns=1, source="import", participant=p, tool=tool, items=items)
            )
            recs.append(
                rec.TaskTime(
                    t_ns=1,
                    source="import",
                    participant=p,
                    tool=tool,
                    task="run",
                    seconds=float(rng.uniform(100, 400) if good else rng.uniform(200, 700)),
                )
            )
    m = analyze(spec, recs, {"name": "seed", "status": "complete", "delivery": "import"})
    t = table2(m)
    assert t is not None
    assert [c.title for c in t.columns] == [
        "Metric",
        "AHE CLI",
        "Globus",
        "AHE GUI",
        "UNICORE",
        "AHE ACD",
        "AHE Cert",
    ]
    # SUS and time only: the study asks no Likert items and has no observer
    assert [r[0] for r in t.rows] == [
        "Mean SUS score (100 = most usable)",
        "SUS score P-value",
        "Mean task time (seconds)",
        "Mean task time P-value",
    ]
    for k, (a, b) in enumerate(SEED_PAIRS):
        xa = np.array([sus_of[(f"P{i}", _slug(a))] for i in range(10)])
        xb = np.array([sus_of[(f"P{i}", _slug(b))] for i in range(10)])
        want = sst.ttest_rel(xa, xb, alternative="greater")
        assert t.rows[0][1 + 2 * k] == pytest.approx(xa.mean())
        assert t.rows[0][2 + 2 * k] == pytest.approx(xb.mean())
        assert t.rows[1][1 + 2 * k] == pytest.approx(float(want.pvalue))
        assert t.rows[1][2 + 2 * k] == pytest.approx(float(want.statistic))


SPARSE: list[dict[str, Any]] = [
    {"schema": "gridbench.study/1"},
    {
        "schema": "gridbench.study/1",
        "tools": {"a": {}},
        "comparisons": [{"a": "a", "b": "b", "metric": "sus"}],
    },
    {
        "schema": "gridbench.study/1",
        "tools": {"a": {"sus": {"scores": [1, None]}, "tasks": {"per_task": {"x": {}}}}},
        "power": {},
        "install_survey": {"releases": [{"release": "r"}], "trend": {}},
        "validity": {"flags": [{}]},
        "free_text": [{}],
        "notes": [None],
    },
    {
        "schema": "gridbench.study/1",
        "status": "failed",
        "power": {"n_required": 5, "enough": False, "seed_effect_range": [None]},
        "comparisons": [{"a": "x", "b": "y", "metric": "time", "p": 0.01, "significant": True}],
    },
]


@pytest.mark.parametrize("doc", SPARSE)
def test_a_sparse_valid_metrics_document_renders(doc: dict[str, Any]) -> None:
    from gridbench.study.analysis import figures
    from gridbench.study.metrics_schema import validate_metrics

    validate_metrics(doc)
    report = build_report(doc)
    assert report.headline.findings
    render_page(report)
    _terminal(report)
    figures(doc)


def test_headline_without_sus_leads_with_the_first_tested_metric() -> None:
    from gridbench.study.analysis import analyze
    from gridbench.study.model import StudySpec

    spec = StudySpec.model_validate(spec_data(questionnaires={"sus": False}))
    recs = [r for r in sample_records() if not isinstance(r, rec.SusAnswer)]
    m = analyze(spec, recs, {"name": "x", "status": "complete", "delivery": "browser"})
    time = next(c for c in m["comparisons"] if c["metric"] == "time")
    first = build_report(m).headline.findings[0]
    assert first.text == (
        f"AHE GUI vs UNICORE GUI: Mean task time p = {time['p']:.3e} "
        f"(adjusted {time['p_adjusted']:.3e})"
    )
    assert first.status == "pass"
    assert "not tested" not in first.evidence


def test_experiment_switch_drops_free_text_from_the_generic_report(tmp_path: Path) -> None:
    from gridbench.pipeline import analyze_and_report

    recs = sample_records(PEOPLE[:4])
    run = make_run(tmp_path, recs, spec_data(participants=PEOPLE[:4]))
    run.update_experiment(report_free_text=False)
    done = analyze_and_report(run.path)
    assert "free-text" not in {t.id for t in done.report.tables()}
    shared = [run.path / "report.html", run.path / "report.json", *(run.path / "tables").glob("*")]
    assert all("liked AHE" not in p.read_text() for p in shared)
    assert "liked AHE" in run.metrics_file.read_text()  # the run's own record keeps it


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(obj, dict):
        out += [p for k, v in obj.items() for p in _paths(v, (*at, k))]
    elif isinstance(obj, list):
        out += [p for i, v in enumerate(obj) for p in _paths(v, (*at, i))]
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return doc


HOSTILE_VALUES: list[Any] = [None, True, 0, -1, 1e308, "x", HOSTILE, [], {}, [None], {"a": None}]


def test_a_damaged_metrics_document_is_an_error_or_a_report(
    built: tuple[RunDir, dict[str, Any], Report],
) -> None:
    """Any one field replaced by a value of another shape: validate_metrics refuses it
    with one ResultsError, or the report builds and renders (never a traceback)."""
    import copy
    import random

    from gridbench.study.analysis import figures
    from gridbench.study.metrics_schema import validate_metrics

    _, m, _ = built
    good = json.loads(json.dumps(m))
    paths = _paths(good)
    rnd = random.Random(5)
    refused = built_ok = 0
    for _ in range(150):
        path = rnd.choice(paths)
        doc = _set(copy.deepcopy(good), path, rnd.choice(HOSTILE_VALUES))
        try:
            validate_metrics(doc, "metrics.json")
        except ResultsError:
            refused += 1
            continue
        report = build_report(doc)
        render_page(report)
        _terminal(report)
        figures(doc)
        built_ok += 1
    assert refused and built_ok  # both outcomes were exercised
