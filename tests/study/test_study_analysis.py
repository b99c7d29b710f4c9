"""Study analysis: records -> frames -> ``gridbench.study/1`` (Table 1 figures, Table 2
tests, power, install survey, validity), checked against values computed here by hand
or with scipy directly."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sst

from gridbench.errors import ResultsError
from gridbench.specload import dump_yaml
from gridbench.store.layout import RunDir, write_json
from gridbench.study import records as rec
from gridbench.study.analysis import analyze, analyze_and_write, figures
from gridbench.study.dataset import build_dataset
from gridbench.study.metrics_schema import validate_metrics
from gridbench.study.model import StudySpec
from gridbench.study.survey import topic

PEOPLE = [f"P{i:02d}" for i in range(1, 13)]


def spec_data(**extra: Any) -> dict[str, Any]:
    tasks = [
        {"id": "launch", "title": "Launch", "instructions": "Launch the app."},
        {"id": "fetch", "title": "Fetch", "instructions": "Fetch the output."},
    ]
    data: dict[str, Any] = {
        "name": "gui-study",
        "purpose": "Which GUI is easier?",
        "participants": PEOPLE,
        "tools": [
            {"id": "ahe_gui", "title": "AHE GUI", "tasks": tasks},
            {"id": "unicore_gui", "title": "UNICORE GUI", "tasks": tasks},
        ],
        "comparisons": [{"a": "ahe_gui", "b": "unicore_gui", "better": "a"}],
        "analysis": {"bootstrap_resamples": 999},
    }
    data.update(extra)
    return data


def _t(i: int) -> int:
    return 1_700_000_000_000_000_000 + i


def sample_records(people: list[str] = PEOPLE, seed: int = 7) -> list[rec.Record]:
    """A browser study: AHE GUI clearly easier than UNICORE GUI, with noise."""
    rng = np.random.default_rng(seed)
    out: list[rec.Record] = []

    def add(r: rec.Record) -> None:
        out.append(r)

    for k, p in enumerate(people, 1):
        add(
            rec.SessionStarted(
                t_ns=_t(k),
                participant=p,
                square_row=0,
                tool_order=["ahe_gui", "unicore_gui"],
                task_order={"ahe_gui": ["launch", "fetch"], "unicore_gui": ["launch", "fetch"]},
                seed=0,
            )
        )
        for tool, good in (("ahe_gui", True), ("unicore_gui", False)):
            for task in ("launch", "fetch"):
                secs = float(rng.uniform(60, 120) if good else rng.uniform(150, 300))
                add(rec.TaskStarted(t_ns=_t(k), participant=p, tool=tool, task=task))
                add(
                    rec.TaskStopped(
                        t_ns=_t(k), participant=p, tool=tool, task=task, elapsed_ns=int(secs * 1e9)
                    )
                )
                add(
                    rec.LikertAnswer(
                        t_ns=_t(k),
                        participant=p,
                        tool=tool,
                        task=task,
                        difficulty=int(rng.integers(1, 3) if good else rng.integers(2, 6)),
                        satisfaction=int(rng.integers(4, 6) if good else rng.integers(1, 5)),
                    )
                )
                add(
                    rec.Observation(
                        t_ns=_t(k),
                        source="observer",
                        participant=p,
                        tool=tool,
                        task=task,
                        success=bool(good or rng.random() < 0.6),
                        failure=int(rng.integers(1, 3) if good else rng.integers(1, 5)),
                    )
                )
            pos = rng.integers(4, 6, 5) if good else rng.integers(2, 5, 5)
            neg = rng.integers(1, 3, 5) if good else rng.integers(2, 5, 5)
            items = [int(x) for pair in zip(pos, neg, strict=True) for x in pair]
            add(rec.SusAnswer(t_ns=_t(k), participant=p, tool=tool, items=items))
        add(rec.FreeText(t_ns=_t(k), participant=p, answers={"comments": f"<b>{p}</b> liked AHE"}))
        add(rec.Finished(t_ns=_t(k), participant=p))
    return out


def make_run(
    tmp: Path,
    records: list[rec.Record],
    data: dict[str, Any] | None = None,
    delivery: str = "browser",
) -> RunDir:
    d = data or spec_data()
    run = RunDir.create(tmp, d["name"])
    write_json(
        run.experiment_file,
        {
            "id": run.id,
            "name": d["name"],
            "kind": "study",
            "status": "done",
            "created": "2026-01-01T00:00:00Z",
            "tools": [t["id"] for t in d["tools"]],
            "delivery": delivery,
            "participants": len(d.get("participants", [])),
        },
    )
    run.spec_file.write_text(dump_yaml(d))
    rec.create_log(run.path)  # as create_study_run does
    for r in records:
        rec.append(run.path, r)
    return run


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, dict[str, Any]]:
    run = make_run(tmp_path_factory.mktemp("study"), sample_records())
    return run, analyze_and_write(run)


def _sus(items: list[int]) -> float:
    return 2.5 * sum((x - 1) if i % 2 == 0 else (5 - x) for i, x in enumerate(items))


def _per(records: list[rec.Record], tool: str) -> dict[str, dict[str, Any]]:
    """Per participant, computed here from the records: SUS, mean time, means of Likert/failure."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if getattr(r, "tool", None) != tool:
            continue
        d = out.setdefault(r.participant, {"t": [], "f": [], "d": [], "s": []})  # type: ignore[union-attr]
        if isinstance(r, rec.SusAnswer):
            d["sus"] = _sus(r.items)
        elif isinstance(r, rec.TaskStopped):
            d["t"].append(r.elapsed_ns / 1e9)
        elif isinstance(r, rec.LikertAnswer):
            d["d"].append(r.difficulty)
            d["s"].append(r.satisfaction)
        elif isinstance(r, rec.Observation):
            d["f"].append(r.failure)
    for d in out.values():
        d["time"], d["failure"] = np.mean(d["t"]), np.mean(d["f"])
        d["difficulty"], d["satisfaction"] = np.mean(d["d"]), np.mean(d["s"])
    return out


def test_metrics_document_is_valid_json_without_nan(
    analysed: tuple[RunDir, dict[str, Any]],
) -> None:
    run, _ = analysed
    text = run.metrics_file.read_text()
    assert "NaN" not in text and "Infinity" not in text
    doc = json.loads(text)
    validate_metrics(doc, str(run.metrics_file))
    assert doc["schema"] == "gridbench.study/1"
    assert doc["participants"] == {"declared": 12, "with_data": 12, "finished": 12, "started": 12}
    assert doc["validity"]["valid"] is True, doc["validity"]["flags"]


def test_table2_matches_scipy_on_the_same_pairs(analysed: tuple[RunDir, dict[str, Any]]) -> None:
    _, metrics = analysed
    recs = sample_records()
    a, b = _per(recs, "ahe_gui"), _per(recs, "unicore_gui")
    alts = {
        "sus": "greater",
        "satisfaction": "greater",
        "time": "less",
        "failure": "less",
        "difficulty": "less",
    }
    tests = {t["metric"]: t for t in metrics["comparisons"]}
    assert list(tests) == ["sus", "time", "failure", "difficulty", "satisfaction"]
    for metric, alt in alts.items():
        xa = np.array([a[p][metric] for p in PEOPLE])
        xb = np.array([b[p][metric] for p in PEOPLE])
        want = sst.ttest_rel(xa, xb, alternative=alt)
        got = tests[metric]
        assert got["alternative"] == alt
        assert got["n"] == 12 and got["df"] == 11
        assert got["t"] == pytest.approx(float(want.statistic), rel=1e-9)
        assert got["p"] == pytest.approx(float(want.pvalue), rel=1e-9)
        assert got["mean_a"] == pytest.approx(xa.mean()) and got["mean_b"] == pytest.approx(
            xb.mean()
        )
        d = xa - xb
        assert got["dz"] == pytest.approx(d.mean() / d.std(ddof=1))
    # SUS t by hand: mean difference over its standard error
    xa = np.array([a[p]["sus"] for p in PEOPLE])
    xb = np.array([b[p]["sus"] for p in PEOPLE])
    d = xa - xb
    t_hand = d.mean() / (math.sqrt(sum((x - d.mean()) ** 2 for x in d) / 11) / math.sqrt(12))
    assert tests["sus"]["t"] == pytest.approx(t_hand)
    # the hypothesis holds on every metric for this clear-cut data
    assert all(t["significant"] for t in tests.values())


def test_holm_adjusted_by_hand(analysed: tuple[RunDir, dict[str, Any]]) -> None:
    _, metrics = analysed
    ps = [t["p"] for t in metrics["comparisons"]]
    order = np.argsort(ps)
    m = len(ps)
    adj = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adj[i] = running
    assert [t["p_adjusted"] for t in metrics["comparisons"]] == pytest.approx(adj)


def test_table1_figures(analysed: tuple[RunDir, dict[str, Any]]) -> None:
    _, metrics = analysed
    recs = sample_records()
    for tool in ("ahe_gui", "unicore_gui"):
        per = _per(recs, tool)
        got = metrics["tools"][tool]["tasks"]
        times = np.array([per[p]["time"] for p in PEOPLE])
        assert got["time_mean_s"] == pytest.approx(times.mean())
        assert got["time_geomean_s"] == pytest.approx(float(sst.gmean(times)))
        lo, hi = got["time_geomean_ci95"]
        assert lo < got["time_geomean_s"] < hi
        assert got["failure_mean"] == pytest.approx(np.mean([per[p]["failure"] for p in PEOPLE]))
        sat = [s for p in PEOPLE for s in per[p]["s"]]
        dif = [s for p in PEOPLE for s in per[p]["d"]]
        assert got["satisfied_pct"] == pytest.approx(100 * sum(s >= 4 for s in sat) / len(sat))
        assert got["difficult_pct"] == pytest.approx(100 * sum(s >= 4 for s in dif) / len(dif))
        obs: dict[str, list[bool]] = {}
        for r in recs:
            if isinstance(r, rec.Observation) and r.tool == tool:
                obs.setdefault(r.participant, []).append(r.success)
        assert got["success_rate"] == pytest.approx(100 * sum(all(v) for v in obs.values()) / 12)
        assert got["n"] == 12
    assert metrics["tools"]["ahe_gui"]["tasks"]["success_rate"] == 100.0


def test_later_answer_replaces_earlier() -> None:
    spec = StudySpec.model_validate(spec_data())
    first = rec.SusAnswer(t_ns=1, participant="P01", tool="ahe_gui", items=[1] * 10)
    again = rec.SusAnswer(t_ns=2, participant="P01", tool="ahe_gui", items=[5, 1] * 5)
    stop1 = rec.TaskStopped(
        t_ns=1, participant="P01", tool="ahe_gui", task="launch", elapsed_ns=10**9
    )
    stop2 = rec.TaskTime(t_ns=2, participant="P01", tool="ahe_gui", task="launch", seconds=42.0)
    ghost = rec.SusAnswer(t_ns=3, participant="P01", tool="nope", items=[3] * 10)
    data = build_dataset([first, again, stop1, stop2, ghost], spec)
    assert data.sus.height == 1 and data.sus.row(0)[2:] == (5, 1) * 5
    assert data.tasks["seconds"].to_list() == [42.0]
    assert data.notes and "1 record(s)" in data.notes[0]


def test_power_from_stated_effect_and_small_cohort_flag(tmp_path: Path) -> None:
    people = PEOPLE[:6]
    data = spec_data(participants=people, analysis={"effect_size": 0.5, "bootstrap_resamples": 999})
    run = make_run(tmp_path, sample_records(people), data)
    m = analyze_and_write(run)
    assert m["power"]["effect_from"] == "stated"
    assert m["power"]["n_required"] == 27  # d_z 0.5, one-tailed, power 0.8, alpha 0.05
    assert m["power"]["n_have"] == 6 and m["power"]["enough"] is False
    assert [f["rule"] for f in m["validity"]["flags"]] == ["small_cohort"]


def test_observed_effect_is_the_smallest_sus_dz(analysed: tuple[RunDir, dict[str, Any]]) -> None:
    _, m = analysed
    sus_test = next(t for t in m["comparisons"] if t["metric"] == "sus")
    assert m["power"]["effect_from"] == "observed"
    assert m["power"]["effect_size"] == pytest.approx(abs(sus_test["dz"]))
    assert m["power"]["n_required"] >= 2
    assert m["power"]["enough"] is (m["power"]["n_required"] <= 12)


def test_unfinished_missing_sus_and_few_pairs_are_flagged(tmp_path: Path) -> None:
    recs = sample_records(PEOPLE[:3])
    # P03 left before finishing: no SUS for unicore, no Finished
    recs = [
        r
        for r in recs
        if not (
            getattr(r, "participant", "") == "P03"
            and (
                isinstance(r, rec.Finished)
                or (isinstance(r, rec.SusAnswer) and r.tool == "unicore_gui")
            )
        )
    ]
    # P01 and P02 give the same SUS for both tools: no SUS t-test is possible with 2 equal pairs
    m = analyze_and_write(make_run(tmp_path, recs, spec_data(participants=PEOPLE[:3])))
    rules = {f["rule"]: f for f in m["validity"]["flags"]}
    assert "P03" in rules["unfinished"]["detail"]
    assert rules["missing_sus"]["at"] == "unicore_gui" and "P03" in rules["missing_sus"]["detail"]
    sus_test = next(t for t in m["comparisons"] if t["metric"] == "sus")
    assert sus_test["n"] == 2


def test_install_survey_trend_and_complaints() -> None:
    spec = StudySpec.model_validate(
        spec_data(
            install_survey={"items": ["install", "config_master", "docs"], "releases": ["r1", "r2"]}
        )
    )
    recs: list[rec.Record] = []
    vals = {
        "r1": {"install": [3, 2], "config_master": [3, 3], "docs": [2, 4]},
        "r2": {"install": [5, 4], "config_master": [4, 4], "docs": [4, 5]},
    }
    for rel, items in vals.items():
        for item, vs in items.items():
            for i, v in enumerate(vs):
                recs.append(
                    rec.InstallRating(
                        t_ns=1,
                        source="import",
                        release=rel,
                        respondent=f"site{i}",
                        item=item,
                        value=v,
                    )
                )
    recs.append(
        rec.InstallRating(
            t_ns=1, source="import", release="r2", respondent="x", item="docs", value=9
        )
    )
    recs.append(
        rec.Complaint(
            t_ns=1, source="import", release="r1", text="The RPM install failed on a dependency"
        )
    )
    recs.append(
        rec.Complaint(
            t_ns=1, source="import", release="r1", text="Configuring the master node took hours"
        )
    )
    recs.append(
        rec.Complaint(t_ns=1, source="import", release="r2", text="The manual is out of date")
    )
    m = analyze(spec, recs, {"name": "x", "status": "done", "delivery": "import"})
    s = m["install_survey"]
    r1, r2 = s["releases"]
    assert r1["overall"] == pytest.approx(17 / 6) and r2["overall"] == pytest.approx(26 / 6)
    assert r1["items"]["docs"] == {"mean": 3.0, "n": 2}
    assert s["trend"]["change"] == pytest.approx(26 / 6 - 17 / 6)
    assert s["trend"]["slope_per_release"] == pytest.approx(26 / 6 - 17 / 6)
    topics = {(c["release"], c["topic"]): c["count"] for c in s["complaints"]}
    assert topics == {
        ("r1", "stability"): 1,
        ("r1", "configuration"): 1,
        ("r2", "documentation"): 1,
    }
    assert s["out_of_scale"] == 1
    assert topic("docs miss the client node") == "documentation"
    assert topic("installer hangs on the network step") == "stability"
    assert topic("nice colours") == "other"
    assert any(f["rule"] == "out_of_scale" for f in m["validity"]["flags"])


def test_figures_carry_the_per_participant_samples(analysed: tuple[RunDir, dict[str, Any]]) -> None:
    _, m = analysed
    figs = {f.key: f for f in figures(m)}
    assert set(figs) == {"sus.ahe_gui", "sus.unicore_gui", "time.ahe_gui", "time.unicore_gui"}
    assert figs["sus.ahe_gui"].samples == tuple(m["tools"]["ahe_gui"]["sus"]["scores"])
    assert (
        figs["sus.ahe_gui"].higher_is_better is True
        and figs["time.ahe_gui"].higher_is_better is False
    )
    assert len(figs["time.unicore_gui"].samples) == 12


def test_malformed_metrics_is_one_results_error(tmp_path: Path) -> None:
    bad = {"schema": "gridbench.study/1", "tools": {"a": {"sus": {"mean": "68"}}}}
    with pytest.raises(ResultsError) as err:
        validate_metrics(bad, str(tmp_path / "metrics.json"))
    assert "tools.a.sus.mean" in str(err.value) and "metrics.json" in str(err.value)
    with pytest.raises(ResultsError, match="schema"):
        validate_metrics({"schema": "gridbench.net/1"}, "m.json")
    with pytest.raises(ResultsError, match=r"comparisons\.0\.p"):
        validate_metrics(
            {
                "schema": "gridbench.study/1",
                "comparisons": [{"a": "x", "b": "y", "metric": "sus", "p": True}],
            }
        )


def test_bad_spec_in_run_is_a_results_error(tmp_path: Path) -> None:
    run = make_run(tmp_path, sample_records(PEOPLE[:2]), spec_data(participants=PEOPLE[:2]))
    run.spec_file.write_text("name: x\npurpose: y\ntools: []\n")
    with pytest.raises(ResultsError, match="not a valid study spec"):
        analyze_and_write(run)


def test_a_deleted_answer_log_is_damage_not_an_empty_study(tmp_path: Path) -> None:
    run = make_run(tmp_path, sample_records(PEOPLE[:2]), spec_data(participants=PEOPLE[:2]))
    before = analyze_and_write(run)
    assert before["participants"]["started"] == 2
    written = run.metrics_file.read_bytes()
    rec.log_path(run.path).unlink()
    with pytest.raises(ResultsError, match=r"answer log study\.jsonl is missing") as err:
        analyze_and_write(run)
    assert "restore" in (err.value.fix or "")
    assert run.metrics_file.read_bytes() == written  # the metrics were not overwritten


def test_a_new_study_run_starts_its_private_log(tmp_path: Path) -> None:
    from gridbench.study.runs import create_study_run

    data = spec_data(participants=PEOPLE[:2])
    run = create_study_run(tmp_path, StudySpec.model_validate(data), data, delivery="browser")
    log = rec.log_path(run.path)
    assert log.exists() and log.stat().st_size == 0 and log.stat().st_mode & 0o777 == 0o600
    m = analyze_and_write(run)  # nobody answered yet: a valid empty study
    assert m["participants"]["started"] == 0
    rec.append(run.path, sample_records(PEOPLE[:1])[0])
    assert log.stat().st_mode & 0o777 == 0o600


def test_metrics_nobody_answered_are_noted_not_flagged() -> None:
    # an import with SUS columns only: time, failure, difficulty, satisfaction have no answers
    spec = StudySpec.model_validate(spec_data())
    recs = [r for r in sample_records() if isinstance(r, rec.SusAnswer)]
    m = analyze(spec, recs, {"name": "x", "status": "complete", "delivery": "import"})
    assert [(c["metric"], c["n"]) for c in m["comparisons"]] == [
        ("sus", 12),
        ("time", 0),
        ("failure", 0),
        ("difficulty", 0),
        ("satisfaction", 0),
    ]
    assert m["validity"]["flags"] == []
    assert "no answers for difficulty, failure, satisfaction, time: not tested" in m["notes"]
    assert m["participants"]["finished"] == 12  # imported answers are finished ones


def test_instruments_switched_off_are_not_compared() -> None:
    spec = StudySpec.model_validate(
        spec_data(questionnaires={"sus": False, "likert": False, "failure_scale": True})
    )
    m = analyze(spec, sample_records(), {"name": "x", "status": "running", "delivery": "browser"})
    assert [c["metric"] for c in m["comparisons"]] == ["time", "failure"]


def _random_log(rng: np.random.Generator) -> list[rec.Record]:
    """A log with random gaps, repeats, equal answers and unknown tools (all valid records)."""
    out: list[rec.Record] = []
    tools, tasks = ["ahe_gui", "unicore_gui", "ghost"], ["launch", "fetch"]
    for i in range(int(rng.integers(0, 6))):
        p = f"P{i:02d}"
        if rng.random() < 0.7:
            out.append(rec.SessionStarted(t_ns=1, participant=p, square_row=0, tool_order=tools[:2],
                                          task_order={}, seed=0))  # fmt: skip
        for _ in range(int(rng.integers(0, 12))):
            tool, task = str(rng.choice(tools)), str(rng.choice(tasks))
            kind = int(rng.integers(0, 5))
            if kind == 0:
                same = rng.random() < 0.3
                items = [3] * 10 if same else [int(x) for x in rng.integers(1, 6, 10)]
                out.append(rec.SusAnswer(t_ns=1, participant=p, tool=tool, items=items))
            elif kind == 1:
                out.append(rec.TaskStopped(t_ns=1, participant=p, tool=tool, task=task,
                                           elapsed_ns=int(rng.integers(0, 10**12))))  # fmt: skip
            elif kind == 2:
                out.append(rec.LikertAnswer(t_ns=1, participant=p, tool=tool, task=task,
                                            difficulty=None if rng.random() < 0.3 else 3,
                                            satisfaction=int(rng.integers(1, 6))))  # fmt: skip
            elif kind == 3:
                out.append(rec.Observation(t_ns=1, participant=p, tool=tool, task=task,
                                           success=bool(rng.random() < 0.5),
                                           failure=None if rng.random() < 0.3 else 2))  # fmt: skip
            else:
                out.append(rec.InstallRating(t_ns=1, release=str(rng.choice(["a", "b"])),
                                             respondent=p, item="install",
                                             value=int(rng.integers(1, 11))))  # fmt: skip
        if rng.random() < 0.5:
            out.append(rec.Finished(t_ns=1, participant=p))
    return out


def _nans(obj: Any, at: str = "") -> list[str]:
    """Where a non-finite float sits in a document."""
    if isinstance(obj, float):
        return [] if math.isfinite(obj) else [at]
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in _nans(v, f"{at}.{k}")]
    if isinstance(obj, list | tuple):
        return [x for i, v in enumerate(obj) for x in _nans(v, f"{at}.{i}")]
    return []


@pytest.mark.parametrize("seed", range(40))
def test_any_valid_log_analyses_to_a_valid_document(seed: int) -> None:
    from gridbench.store.layout import json_safe
    from gridbench.study.report import build_report

    rng = np.random.default_rng(seed)
    spec = StudySpec.model_validate(
        spec_data(analysis={"bootstrap_resamples": 100, "tails": int(rng.integers(1, 3))})
    )
    m = analyze(spec, _random_log(rng), {"name": "x", "status": "running", "delivery": "browser"})
    assert not _nans(m), _nans(m)
    text = json.dumps(json_safe(m), allow_nan=False)
    doc = json.loads(text)
    validate_metrics(doc)
    build_report(doc)
    figures(doc)
    for c in doc["comparisons"]:
        assert (c["p"] is None) == (c["t"] is None)
        assert c["p"] is None or 0.0 <= c["p"] <= 1.0
