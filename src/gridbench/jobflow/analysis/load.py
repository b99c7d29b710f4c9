"""Reading a results directory (the only module of analysis that touches files).

Layout: RUN/experiment.json, RUN/spec.yaml, RUN/trials/<trial_id>/{trial.json, events.csv
or events.arrows,
resources.csv}; analysis writes RUN/metrics.json and RUN/trials/<id>/series.json.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.errors import GridbenchError, ResultsError
from gridbench.jobflow.analysis.clocks import to_controller_time
from gridbench.jobflow.analysis.info import TrialInfo
from gridbench.jobflow.analysis.reduce import ReducedEvents, reduce_events
from gridbench.jobflow.events.job_numbers import job_prefix
from gridbench.jobflow.events.log import EVENTS_FILE
from gridbench.jobflow.events.trial_log import (
    ARROW_FILE,
    read_trial_log_counted,
    scan_trial_log,
    trial_log_path,
)
from gridbench.store.layout import read_json
from gridbench.store.safe_open import CAPS, opened_store_file, read_store_text

TRIALS_DIR = "trials"
TRIAL_FILE = "trial.json"
RESOURCES_FILE = "resources.csv"
SERVER_RESOURCES_FILE = "server_resources.csv"
METRICS_FILE = "metrics.json"
SERIES_FILE = "series.json"
RESOURCES_SCHEMA = {
    "t_ns": pl.Int64,
    "cpu_percent": pl.Float64,
    "rss_bytes": pl.Int64,
    "children": pl.Int64,
}


def trial_dirs(run_dir: Path) -> list[Path]:
    """Trial directories (those holding a trial.json), sorted by name."""
    root = run_dir / TRIALS_DIR
    if not run_dir.is_dir():
        raise ResultsError(
            "results directory not found", where=str(run_dir), fix="give the path of a run"
        )
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / TRIAL_FILE).is_file())


def read_trial_info(trial_dir: Path) -> TrialInfo:
    """The trial.json of one trial."""
    path = trial_dir / TRIAL_FILE
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise ResultsError("trial.json is not a JSON object", where=str(path))
    return TrialInfo.from_dict(data, where=str(path))


ANALYSIS_COLUMNS = ("job", "stage", "t_ns", "precision_ns", "agent", "clock_offset_ns", "attrs")


def read_trial_events(trial_dir: Path, info: TrialInfo) -> pl.DataFrame:
    """The trial's event log on the controller's clock (empty when the trial recorded
    nothing yet): ``t_ns − clock_offset_ns``, with each stamp's clock bound from trial.json
    ``agents`` (:func:`gridbench.jobflow.analysis.clocks.to_controller_time`).

    A finished trial's log that is gone, or holds fewer events than trial.json counted,
    is damage: one error naming the file, never a valid-looking empty trial."""
    return read_trial_events_counted(trial_dir, info)[0]


def read_trial_events_counted(trial_dir: Path, info: TrialInfo) -> tuple[pl.DataFrame, int]:
    """:func:`read_trial_events` and the torn batches its columnar log skipped."""
    path = trial_log_path(trial_dir)
    if path is None and info.ended_ns is not None:  # the runner creates it before the start
        raise _lost(trial_dir / ARROW_FILE, info, MISSING)
    # events.csv or events.arrows; the analysis never looks at the source column
    events, torn = read_trial_log_counted(trial_dir, columns=ANALYSIS_COLUMNS)
    if path is not None:
        _check_count(path, info, events.height)
    return to_controller_time(events, info.agents), torn


def _check_count(path: Path, info: TrialInfo, read: int) -> None:
    """A finished trial's log holds at least the events trial.json counted (what came
    later, a collector's late report, cleanup's stamps, only adds): fewer is damage, a log
    cut or emptied after the trial, never a valid-looking smaller trial."""
    counted = info.events or 0
    if info.ended_ns is not None and read < counted:
        raise _lost(path, info, f"holds only {read} event{'s' if read != 1 else ''}")


def reduce_trial_events(
    trial_dir: Path, info: TrialInfo, stages: Sequence[str], keep: pl.Expr
) -> tuple[ReducedEvents, int]:
    """The trial's events on the controller's clock reduced a chunk at a time
    (:func:`gridbench.jobflow.analysis.reduce.reduce_events`), and the torn batches
    skipped; the same checks as :func:`read_trial_events`."""
    with scan_trial_log(trial_dir) as scan:
        if scan is None and info.ended_ns is not None:  # the runner creates it first
            raise _lost(trial_dir / ARROW_FILE, info, MISSING)

        def chunks(numbered: str | None) -> Iterator[pl.DataFrame]:
            if scan is not None:
                read = scan.chunks(ANALYSIS_COLUMNS, categorical=True, job_prefix=numbered)
                for chunk in read:
                    yield to_controller_time(chunk, info.agents)

        prefix = job_prefix(info.trial_id)
        reduced = reduce_events(chunks, stages, keep, job_prefix=prefix)
        torn = scan.torn if scan is not None else 0
    if scan is not None:
        _check_count(scan.path, info, reduced.events)
    return reduced, torn


# the log's file is the format marker: a missing one may have been either
MISSING = f"is missing (no {ARROW_FILE}, nor the {EVENTS_FILE} of older runs)"


def _lost(path: Path, info: TrialInfo, what: str) -> ResultsError:
    counted = f" (trial.json counted {info.events} events)" if info.events else ""
    return ResultsError(
        f"trial {info.trial_id}'s event log {what}{counted}: its events are lost",
        where=str(path),
        fix=f"restore {path.name} from a backup, or re-run the experiment; the run's "
        "metrics.json was left as it was",
    )


def check_trials_present(run_dir: Path, found: list[Path]) -> None:
    """Refuse a run whose experiment.json counts more finished trials than folders left
    (a deleted trial folder is lost data, not a smaller experiment)."""
    done = read_experiment(run_dir).get("trials_done")
    if isinstance(done, int) and not isinstance(done, bool) and done > len(found):
        raise ResultsError(
            f"experiment.json records {done} finished trial(s) but only {len(found)} trial "
            f"folder(s) with a trial.json remain: the others' data is lost",
            where=str(run_dir / TRIALS_DIR),
            fix="restore the missing trial folders from a backup, or re-run the "
            "experiment; the run's metrics.json was left as it was",
        )


def read_resources(trial_dir: Path) -> pl.DataFrame | None:
    """Client CPU/RSS samples, or ``None`` when not recorded or unreadable."""
    df = _read_samples(trial_dir / RESOURCES_FILE)
    if df is None:
        return None
    cols = [pl.col(c).cast(t, strict=False) for c, t in RESOURCES_SCHEMA.items() if c in df.columns]
    return df.select(cols) if cols else None


SERVER_RESOURCES_SCHEMA = {
    "t_ns": pl.Int64,
    "label": pl.String,
    "pid": pl.Int64,
    "cpu_percent": pl.Float64,
    "rss_bytes": pl.Int64,
    "state": pl.String,
}


def read_server_resources(trial_dir: Path) -> pl.DataFrame | None:
    """Server processes' CPU/RSS samples (server_resources.csv), or ``None`` when the
    spec named none or the file cannot be read (a value that is not a number is null)."""
    df = _read_samples(trial_dir / SERVER_RESOURCES_FILE)
    if df is None:
        return None
    if not {"t_ns", "label", "cpu_percent", "rss_bytes"} <= set(df.columns):
        return None
    return df.select(
        pl.col(c).cast(t, strict=False) if c in df.columns else pl.lit(None, t).alias(c)
        for c, t in SERVER_RESOURCES_SCHEMA.items()
    )


def read_experiment(run_dir: Path) -> dict[str, Any]:
    """experiment.json (empty when absent)."""
    path = run_dir / "experiment.json"
    if not path.is_file():
        return {}
    data = read_json(path)
    return dict(data) if isinstance(data, Mapping) else {}


def read_spec_settings(run_dir: Path) -> dict[str, Any]:
    """``name``, ``thresholds``, ``warmup``, ``validity`` and ``sampling`` from spec.yaml,
    as plain data (empty if absent)."""
    path = run_dir / "spec.yaml"
    try:  # a store file: never through a link, bounded (a planted one is an error)
        text = read_store_text(path, cap=CAPS["spec"], base=run_dir)
    except FileNotFoundError:
        return {}
    from gridbench.specload import parse_yaml

    try:
        root = parse_yaml(text, str(path))
    except GridbenchError as exc:
        raise ResultsError(
            f"the run's spec.yaml cannot be read: {exc.message}",
            where=exc.where or str(path),
            fix="repair spec.yaml, or pass thresholds and warm-up explicitly",
        ) from None
    if not isinstance(root, Mapping):
        return {}
    plain = json.loads(json.dumps(root, default=str))
    keys = ("name", "thresholds", "warmup", "validity", "sampling")
    return {k: plain[k] for k in keys if k in plain}


def _read_samples(path: Path) -> pl.DataFrame | None:
    """A sample file of a trial, read as foreign input (never through a link, a regular
    file only); ``None`` when it is absent, empty or unreadable."""
    try:
        with opened_store_file(path) as (source, size):
            return pl.read_csv(source, infer_schema=False) if size else None
    except (FileNotFoundError, ResultsError, pl.exceptions.PolarsError, OSError):
        return None
