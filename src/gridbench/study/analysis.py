"""From a study run (spec.yaml, study.jsonl) to ``metrics.json`` (``gridbench.study/1``).

:func:`analyze` is pure (spec, records, experiment.json -> metrics); :func:`analyze_and_write`
reads the run's files (foreign input: checked) and writes metrics.json. The parts:
:mod:`~gridbench.study.dataset` (records -> frames, later answers replacing earlier
ones), :mod:`~gridbench.study.sus`, :mod:`~gridbench.study.stats` (paired tests,
correction, power), :mod:`~gridbench.study.survey` and :mod:`~gridbench.study.validity`.

Per tool, the task figures (the seed's Table 1):

- ``success_rate``: % of the participants observed on every task of the tool who
  succeeded in all of them (participants observed on only some tasks are not counted);
- ``time_mean_s``: the mean over participants of their mean seconds per task;
  ``time_geomean_s`` and its 95% CI: the same on a log scale (Student t on the logs,
  back-transformed), the usual summary of skewed times; zero times are left out of it;
- ``failure_mean``: the mean over participants of their mean observer failure scale;
- ``satisfied_pct`` / ``difficult_pct``: % of the task answers rating satisfaction or
  difficulty 4 or 5 (the seed counts answers: 53.54% = 53 of 99 for 33 people x 3 tasks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import polars as pl

from gridbench.errors import GridbenchError, ResultsError
from gridbench.family import Figure
from gridbench.store.layout import RunDir, write_json
from gridbench.study import records as rec
from gridbench.study import stats, survey, sus
from gridbench.study.dataset import SUS_COLUMNS, StudyData, build_dataset
from gridbench.study.metrics_schema import validate_metrics
from gridbench.study.model import METRICS, InstallSurvey, StudySpec
from gridbench.study.validity import validity

SCHEMA: Final = "gridbench.study/1"


def _f(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def _geomean(times: np.ndarray[Any, Any]) -> tuple[float | None, list[float] | None]:
    pos = times[times > 0]
    if not len(pos):
        return None, None
    logs = np.log(pos)
    ci = sus.t_interval(logs)
    return float(np.exp(np.mean(logs))), [
        float(np.exp(ci[0])),
        float(np.exp(ci[1])),
    ] if ci else None


def _counts(col: pl.Series) -> list[int]:
    vals = col.drop_nulls().to_list()
    return [vals.count(k) for k in range(1, 6)]


def _task_summary(
    tasks: pl.DataFrame, frame: pl.DataFrame, tool: str, task_ids: Sequence[str]
) -> dict[str, Any]:
    t = tasks.filter(pl.col("tool") == tool)
    per = frame.filter(pl.col("tool") == tool)
    obs = t.filter(pl.col("success").is_not_null())
    complete = obs.group_by("participant").agg(
        pl.col("task").n_unique().alias("k"), pl.col("success").all().alias("ok")
    )
    complete = complete.filter(pl.col("k") >= len(task_ids))
    times = per["time"].drop_nulls().drop_nans().to_numpy().astype(np.float64)
    geo, geo_ci = _geomean(times)
    sat, dif = t["satisfaction"].drop_nulls(), t["difficulty"].drop_nulls()
    per_task = {}
    for task in task_ids:
        tt = t.filter(pl.col("task") == task)
        secs = tt["seconds"].drop_nulls()
        ok = tt["success"].drop_nulls()
        per_task[task] = {
            "time_mean_s": _f(secs.mean()) if len(secs) else None,
            "n": len(secs),
            "success_rate": _pct(int(ok.sum()), len(ok)),
        }
    return {
        "success_rate": _pct(int(complete["ok"].sum()), len(complete)),
        "observed": len(complete),
        "time_mean_s": _f(np.mean(times)) if len(times) else None,
        "time_geomean_s": geo,
        "time_geomean_ci95": geo_ci,
        "times_s": [float(x) for x in times],
        "failure_mean": _f(per["failure"].drop_nulls().drop_nans().mean()),
        "difficulty_mean": _f(per["difficulty"].drop_nulls().drop_nans().mean()),
        "satisfaction_mean": _f(per["satisfaction"].drop_nulls().drop_nans().mean()),
        "satisfied_pct": _pct(int((sat >= 4).sum()), len(sat)),
        "difficult_pct": _pct(int((dif >= 4).sum()), len(dif)),
        "satisfaction_counts": _counts(t["satisfaction"]),
        "difficulty_counts": _counts(t["difficulty"]),
        "n": t["participant"].n_unique(),
        "per_task": per_task,
    }


def _sus_frame(data: StudyData) -> pl.DataFrame:
    items = data.sus.select(SUS_COLUMNS).to_numpy()
    scores = sus.sus_scores(items) if len(items) else np.empty(0)
    return data.sus.with_columns(pl.Series("score", scores, dtype=pl.Float64))


def _tool_sus(data: StudyData, tool: str, spec: StudySpec) -> dict[str, Any] | None:
    items = (
        data.sus.filter(pl.col("tool") == tool).sort("participant").select(SUS_COLUMNS).to_numpy()
    )
    if not len(items):
        return None
    return sus.summarize(items, spec.analysis.bootstrap_resamples, spec.analysis.seed)


def _install(data: StudyData, spec: StudySpec) -> dict[str, Any] | None:
    declared = spec.install_survey
    if declared is None:
        if data.install.is_empty() and data.complaints.is_empty():
            return None
        # ratings without a declared survey: the items as found, the XtreemOS scale (1-6)
        declared = InstallSurvey.model_construct(
            items=list(dict.fromkeys(data.install["item"].to_list())), releases=[], scale=6
        )
    return survey.summarize(data.install, data.complaints, declared)


def _free_text(data: StudyData) -> list[dict[str, Any]]:
    return [
        {"participant": p, "question": q, "text": a}
        for p, q, a in data.free_text.sort("participant", "question").iter_rows()
        if a
    ]


def _background(data: StudyData) -> list[dict[str, Any]]:
    return [
        {"participant": p, "question": q, "answer": a}
        for p, q, a in data.background.sort("participant", "question").iter_rows()
    ]


def _n_have(tests: Sequence[Mapping[str, Any]], data: StudyData) -> int:
    """The fewest complete pairs of any declared comparison (SUS first), else everyone
    with data: the n the power analysis is set against."""
    for pool in ([t for t in tests if t["metric"] == "sus"], list(tests)):
        if pool:
            return min(int(t["n"]) for t in pool)
    return len(data.with_data)


def _missing_sus(data: StudyData, spec: StudySpec) -> dict[str, list[str]]:
    if not spec.questionnaires.sus:
        return {}
    out = {}
    for tool in spec.tools:
        did = set(data.tasks.filter(pl.col("tool") == tool.id)["participant"].to_list())
        gave = set(data.sus.filter(pl.col("tool") == tool.id)["participant"].to_list())
        out[tool.id] = sorted(did - gave)
    return out


def analyze(
    spec: StudySpec, records: Sequence[rec.Record], experiment: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``gridbench.study/1`` document of a study's spec, log records and
    experiment.json (pure)."""
    data = build_dataset(records, spec)
    scored = _sus_frame(data)
    frame = stats.participant_metrics(scored, data.tasks)
    tools = {
        t.id: {
            "title": t.title,
            "sus": _tool_sus(data, t.id, spec),
            "tasks": _task_summary(data.tasks, frame, t.id, [k.id for k in t.tasks]),
        }
        for t in spec.tools
    }
    tests = stats.comparison_tests(frame, spec)
    # a metric nobody answered (an import without those columns) is noted, not flagged
    unanswered = sorted(
        {t["metric"] for t in tests}
        - {m for m in METRICS if m in frame.columns and frame[m].drop_nulls().len()}
    )
    power = stats.power_analysis(spec, tests, _n_have(tests, data))
    install = _install(data, spec)
    delivery = experiment.get("delivery")
    # sessions are a browser thing: imported data has no "started but not finished"
    unfinished = sorted(data.started - data.finished) if delivery != "import" else []
    declared = experiment.get("participants")
    return {
        "schema": SCHEMA,
        "kind": "study",
        "name": str(experiment.get("name") or spec.name),
        "status": experiment.get("status"),
        "delivery": delivery if isinstance(delivery, str) else None,
        "participants": {
            "declared": declared
            if isinstance(declared, int) and not isinstance(declared, bool)
            else len(spec.participants),
            "with_data": len(data.with_data),
            # an import holds finished answers only: no session, so no "finished" record
            "finished": len(data.finished) if delivery != "import" else len(data.with_data),
            "started": len(data.started),
        },
        "tools": tools,
        "comparisons": tests,
        "correction": spec.analysis.correction,
        "power": power,
        "install_survey": install,
        "background": _background(data),
        "free_text": _free_text(data),
        "validity": validity(
            power=power,
            comparisons=[t for t in tests if t["metric"] not in unanswered],
            missing_sus=_missing_sus(data, spec),
            unfinished=unfinished,
            out_of_scale=int(install["out_of_scale"]) if install else 0,
        ),
        "notes": [
            *data.notes,
            *_notes(tools),
            *([f"no answers for {', '.join(unanswered)}: not tested"] if unanswered else []),
        ],
        "records": len(records),
    }


def _notes(tools: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for tid, t in tools.items():
        s = t.get("sus")
        if isinstance(s, Mapping) and s.get("bca_note"):
            out.append(f"{tid}: {s['bca_note']}")
    return out


def _spec_of(run: RunDir) -> StudySpec:
    from gridbench.study.load import load_study_spec_text

    text = run.spec_text()
    try:
        spec, _ = load_study_spec_text(text, str(run.spec_file))
    except GridbenchError as exc:
        raise ResultsError(
            f"spec.yaml is not a valid study spec: {exc.message}",
            where=str(run.spec_file),
            fix="restore the spec the study ran with ('gridbench study validate' checks it)",
        ) from None
    return spec


def analyze_and_write(run: RunDir) -> dict[str, Any]:
    """Analyse one study run (its spec.yaml and study.jsonl) and write RUN/metrics.json."""
    exp = run.read_experiment_of("study", "study")
    if rec.log_missing(run.path):  # never a valid-looking empty study over lost answers
        raise ResultsError(
            f"the study's answer log {rec.LOG_FILE} is missing: its answers are lost",
            where=str(run.path),
            fix=f"restore {rec.LOG_FILE} from a backup; if truly nobody ever answered, "
            f"create it empty (touch) to analyse an empty study",
        )
    metrics = analyze(_spec_of(run), rec.read_log(run.path), exp)
    write_json(run.metrics_file, metrics)
    return metrics


def _fig(key: str, label: str, unit: str, samples: Any, better: bool) -> Figure | None:
    vals = tuple(
        float(x) for x in samples or [] if isinstance(x, int | float) and not isinstance(x, bool)
    )
    return Figure(key, label, unit, vals, higher_is_better=better) if vals else None


def figures(metrics: Mapping[str, Any]) -> list[Figure]:
    """Comparable figures: ``sus.<tool>`` (per-participant SUS scores) and
    ``time.<tool>`` (per-participant mean seconds per task)."""
    validate_metrics(metrics, "metrics.json")  # foreign input: compare and history do not check it
    out: list[Figure | None] = []
    for tid, t in (metrics.get("tools") or {}).items():
        title = t.get("title") or tid
        s, k = t.get("sus") or {}, t.get("tasks") or {}
        out.append(_fig(f"sus.{tid}", f"{title}: SUS", "score", s.get("scores"), True))
        out.append(_fig(f"time.{tid}", f"{title}: mean task time", "s", k.get("times_s"), False))
    return [f for f in out if f is not None]
