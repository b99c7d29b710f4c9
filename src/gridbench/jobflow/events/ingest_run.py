"""Turn ingested events into a results directory that ``gridbench analyze`` can read.

The run has one trial, ``trials/ingested/``, whose ``events.arrows`` holds client and server
events and whose ``trial.json`` is derived from the data: the offered rate is estimated
from the intended (else submit) stamps, the stage chain is the EDGI chain of the tiers
found (or the one given).

Ingesting over an existing run (``--force``) removes its analysis outputs (metrics.json,
report.json, report.html, tables/, the dashboard's cache): they describe the old events.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import polars as pl

from gridbench.errors import IngestError, ResultsError
from gridbench.jobflow.events.chain import Segment, Stage, StageChain
from gridbench.jobflow.events.columnar import ARROW_SUFFIX, ArrowEventLog, segments
from gridbench.jobflow.events.edgi.collector import ingest_edgi
from gridbench.jobflow.events.edgi.fetch import FetchLimits
from gridbench.jobflow.events.ingest import SHOWN_CHARS, IngestResult, clip
from gridbench.jobflow.events.jsonl import read_jsonl
from gridbench.jobflow.events.log import EVENTS_FILE, concat_events
from gridbench.jobflow.events.model import (
    EVENT_COLUMNS,
    STAGE_CANCELLED,
    STAGE_CLIENT_DONE,
    STAGE_FAILED,
    STAGE_INTENDED,
    STAGE_SUBMIT,
    STAGE_SUBMIT_ACK,
    Precision,
    Source,
)
from gridbench.jobflow.events.trial_log import ARROW_FILE, read_event_log
from gridbench.store.layout import atomic_output, write_text_atomic
from gridbench.store.safe_open import refuse_links

TRIAL_ID: Final = "ingested"
DEFAULT_LATE_THRESHOLD_NS: Final = 100_000_000
_CLIENT_ONLY: Final = frozenset({STAGE_INTENDED, STAGE_SUBMIT_ACK, STAGE_FAILED, STAGE_CANCELLED})
_TIER_STAGE = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)_(entry|submit)$")


@dataclass(slots=True)
class IngestRunResult:
    """What an ``ingest`` command produced."""

    run_dir: Path
    events: int
    jobs: int
    warnings: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def edgi_chain(
    tiers: Sequence[str] = (Source.CE, Source.BRIDGE),
    precision_ns: Mapping[str, int] | None = None,
) -> StageChain:
    """The EDGI job-flow chain through ``tiers`` (nearest first).

    For ``("ce", "bridge")`` this is T1..T8: submit, ce_entry, ce_submit, bridge_entry,
    bridge_submit, bridge_done, ce_done, client_done, with component segments ce_prep,
    bridge_prep, dg (last tier's submit -> done) and ce_finish.
    """
    if not tiers:
        raise IngestError("an EDGI chain needs at least one tier", fix="give --reports")
    prec = dict(precision_ns or {})
    names = [STAGE_SUBMIT]
    for t in tiers:
        names += [f"{t}_entry", f"{t}_submit"]
    names += [f"{t}_done" for t in reversed(tiers)]
    names.append(STAGE_CLIENT_DONE)

    def stage(i: int, name: str) -> Stage:
        client = name in (STAGE_SUBMIT, STAGE_CLIENT_DONE)
        source = Source.CLIENT if client else name.rsplit("_", 1)[0]
        what = {"entry": "entry", "submit": "submitted onward", "done": "finished"}
        label = (
            "client submit call"
            if name == STAGE_SUBMIT
            else "client saw the end"
            if client
            else f"{source} {what[name.rsplit('_', 1)[1]]}"
        )
        default = Precision.US if client else Precision.S
        # the client learns of the end by polling (T8): its stamps carry the bracket
        polled = name == STAGE_CLIENT_DONE
        return Stage(name, source, f"T{i + 1} {label}", prec.get(name, default), polled)

    # component segments (the seed's Table 5 columns) plus the hops between components,
    # which are not components: they make up "other" with the client's own share
    segments = [Segment(f"submit_to_{tiers[0]}", STAGE_SUBMIT, f"{tiers[0]}_entry", False)]
    for t, nxt in zip(tiers, [*tiers[1:], None], strict=True):
        segments.append(Segment(f"{t}_prep", f"{t}_entry", f"{t}_submit"))
        if nxt is not None:
            segments.append(Segment(f"{t}_to_{nxt}", f"{t}_submit", f"{nxt}_entry", False))
    last = tiers[-1]
    segments.append(Segment("dg", f"{last}_submit", f"{last}_done"))
    for inner, outer in zip(reversed(tiers[1:]), reversed(tiers[:-1]), strict=True):
        segments.append(Segment(f"{outer}_finish", f"{inner}_done", f"{outer}_done"))
    segments.append(Segment("client_notice", f"{tiers[0]}_done", STAGE_CLIENT_DONE, False))
    return StageChain(tuple(stage(i, n) for i, n in enumerate(names)), tuple(segments))


def _stage_summary(events: pl.DataFrame) -> pl.DataFrame:
    """Per stage: median time since the job's first event, commonest source, coarsest precision."""
    return (
        events.lazy()
        .with_columns(rel=pl.col("t_ns") - pl.col("t_ns").min().over("job"))
        .group_by("stage")
        .agg(
            pl.col("rel").median().alias("rel"),
            pl.col("source").mode().first().alias("source"),
            pl.col("precision_ns").max().alias("precision_ns"),
        )
        .sort("rel")
        .collect()
    )


def infer_chain(events: pl.DataFrame) -> StageChain:
    """The chain of foreign events: the EDGI chain if ``<tier>_entry/_submit/_done``
    stages are present (tiers ordered by when their jobs enter), else the observed stages
    ordered by their median time within a job."""
    summary = _stage_summary(events)
    prec = dict(zip(summary["stage"].to_list(), summary["precision_ns"].to_list(), strict=True))
    tiers: list[str] = []
    for name in summary["stage"].to_list():  # already in time order
        m = _TIER_STAGE.match(name)
        if m and m.group(1) not in tiers:
            tiers.append(m.group(1))
    if tiers:
        return edgi_chain(tiers, prec)
    keep = summary.filter(
        ~pl.col("stage").is_in(list(_CLIENT_ONLY)) & ~pl.col("stage").str.ends_with("_status")
    )
    stages = tuple(
        Stage(n, s or Source.CLIENT, "", int(p or Precision.US), n == STAGE_CLIENT_DONE)
        for n, s, p in keep.select("stage", "source", "precision_ns").iter_rows()
    )
    if len(stages) < 2:
        raise IngestError(
            "the events hold fewer than two chain stages; nothing to analyse",
            fix="include at least submit and a completion stage for each job",
        )
    return StageChain(stages)


def _times(events: pl.DataFrame, stage: str) -> pl.Series:
    """Each job's earliest ``stage`` stamp on the controller's clock (t_ns − offset)."""
    t = pl.col("t_ns")
    if "clock_offset_ns" in events.columns:  # a bare frame of a caller may lack it
        t = t - pl.col("clock_offset_ns").fill_null(0)
    return (
        events.filter(pl.col("stage") == stage)
        .group_by("job")
        .agg(t.min().alias("t_ns"))
        .get_column("t_ns")
    )


def _agent_clocks(events: pl.DataFrame) -> dict[str, Any]:
    """trial.json ``agents``: each agent's offset when all its events carry one value
    (``null`` when they differ), and its bound: 0 for gridbench itself, else unknown."""
    rows = (
        events.group_by("agent")
        .agg(
            pl.col("clock_offset_ns").fill_null(0).min().alias("lo"),
            pl.col("clock_offset_ns").fill_null(0).max().alias("hi"),
        )
        .sort("agent")
        .rows()
    )
    return {
        str(a): {
            "clock_offset_ns": int(lo) if lo == hi else None,
            "clock_uncertainty_ns": 0 if a == "local" else None,
        }
        for a, lo, hi in rows
    }


def estimate_offered_rate(events: pl.DataFrame) -> float | None:
    """Jobs per second offered: (n - 1) / span of the intended (else submit) stamps."""
    for stage in (STAGE_INTENDED, STAGE_SUBMIT):
        t = _times(events, stage)
        if t.len() >= 2:
            span = int(t.max()) - int(t.min())  # type: ignore[arg-type]
            if span > 0:
                return (t.len() - 1) * 1e9 / span
    return None


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Through the store's writer: ``--force`` writes into a folder that already exists,
    where a planted link must never be written through."""
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


#: What an ingest writes beside its trial: the inputs read and what reading them found.
INGEST_FILE: Final = "ingest.json"


def check_out_dir(out_dir: str | os.PathLike[str], overwrite: bool = False) -> None:
    """Refuse a non-empty output directory unless ``overwrite`` and it is a run made by
    ingest itself (checked before ingesting): ``--force`` never mixes ingested events into
    a measured run, nor deletes another folder's files."""
    out = Path(out_dir)
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    if not overwrite:
        raise ResultsError(
            "output directory already exists and is not empty",
            where=str(out),
            fix="choose another --out, or remove the directory first",
        )
    trials = out / "trials"
    others = [d.name for d in trials.iterdir() if d.name != TRIAL_ID] if trials.is_dir() else []
    if not (out / INGEST_FILE).is_file() or others:
        raise ResultsError(
            "--force replaces only a run made by 'gridbench ingest', and this directory "
            + (
                f"holds measured trials ({', '.join(sorted(others)[:3])}...)"
                if others
                else f"has no {INGEST_FILE}"
            ),
            where=str(out),
            fix="choose another --out (a measured run is never overwritten)",
        )


#: What analysing a run writes next to its events (pipeline, reports, the dashboard's
#: cache). Ingesting again over a run (``--force``) removes them: results of the old events
#: must never be shown as if they were of the new ones; ``gridbench analyze`` writes them anew.
ANALYSIS_OUTPUTS: Final = ("metrics.json", "report.json", "report.html", ".web-view.json")
ANALYSIS_DIRS: Final = ("tables",)


def _remove_stale(out_dir: Path) -> None:
    """Remove the analysis outputs of a run ingested before (links are removed, never
    followed)."""
    for name in (*ANALYSIS_OUTPUTS, *ANALYSIS_DIRS):
        path = out_dir / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)


def _write_log(trial_dir: Path, events: pl.DataFrame) -> None:
    """The trial's columnar log, written aside then renamed over any log ingested before
    (its CSV or its segments), so that the trial never holds half a log."""
    final = trial_dir / ARROW_FILE
    for old in segments(trial_dir / ("events.tmp" + ARROW_SUFFIX)):  # an older ingest's
        old.unlink()
    with atomic_output(final) as tmp:  # a private folder: no planted link is followed
        with ArrowEventLog(tmp) as log:
            log.write_frame(events)
        for old in [trial_dir / EVENTS_FILE, *segments(final)]:
            old.unlink(missing_ok=True)


def _prepare(out_dir: Path, overwrite: bool) -> Path:
    check_out_dir(out_dir, overwrite)
    if overwrite and out_dir.is_dir():
        _remove_stale(out_dir)
    trial = out_dir / "trials" / TRIAL_ID
    refuse_links(trial)  # (and trials/): a planted folder link would take the trial elsewhere
    trial.mkdir(parents=True, exist_ok=True)
    return trial


@dataclass(frozen=True, slots=True)
class IngestInfo:
    """What ``ingest.json`` says about an ingest: the format (``kind``: "edgi", "jsonl"),
    the inputs read, and the warnings and counts of reading them."""

    kind: str
    inputs: Mapping[str, Any]
    warnings: Sequence[str] = ()
    stats: Mapping[str, Any] | None = None


def build_run_from_ingest(
    out_dir: str | os.PathLike[str],
    events: pl.DataFrame,
    *,
    chain: StageChain,
    info: IngestInfo,
    name: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a one-trial results directory from ingested events; returns its path.

    Writes ``experiment.json``, ``ingest.json`` (``info``), and
    ``trials/ingested/{events.arrows,trial.json}``.
    """
    out = Path(out_dir)
    kind = info.kind
    if events.is_empty():
        raise IngestError(
            "no events to write", fix="check the inputs: every line or record was rejected"
        )
    trial_dir = _prepare(out, overwrite)
    events = events.select(*EVENT_COLUMNS).sort("t_ns", "job", maintain_order=True)
    _write_log(trial_dir, events)
    _write_json(trial_dir / "trial.json", _trial_record(events, chain, kind))
    created = datetime.now(UTC).isoformat(timespec="seconds")
    _write_json(
        out / "experiment.json",
        {
            "name": name or out.name,
            "id": uuid.uuid4().hex[:12],
            "status": "complete",
            "backend": f"ingest:{kind}",
            "created": created,
            "spec_hash": None,
            "trials": [TRIAL_ID],
        },
    )
    _write_json(
        out / INGEST_FILE,
        {
            "kind": kind,
            "created": created,
            "inputs": dict(info.inputs),
            "events": events.height,
            "jobs": events.get_column("job").n_unique(),
            "warnings": [clip(w, 4 * SHOWN_CHARS) for w in info.warnings],
            "stats": dict(info.stats or {}),
        },
    )
    return out


def _trial_record(events: pl.DataFrame, chain: StageChain, kind: str) -> dict[str, Any]:
    """``trial.json`` of the one ingested trial, derived from its (sorted) events."""
    rate = estimate_offered_rate(events)
    client_jobs = events.filter(
        pl.col("stage").is_in([STAGE_INTENDED, STAGE_SUBMIT, STAGE_SUBMIT_ACK])
    ).get_column("job")
    planned = client_jobs.n_unique() if client_jobs.len() else events.get_column("job").n_unique()
    starts = _times(events, STAGE_INTENDED)
    if starts.is_empty():
        starts = _times(events, STAGE_SUBMIT)
    submits = _times(events, STAGE_SUBMIT)
    t_min, t_max = int(events["t_ns"].min()), int(events["t_ns"].max())  # type: ignore[arg-type]
    agents = _agent_clocks(events)
    return {
        "trial_id": TRIAL_ID,
        "point_index": 0,
        "trial_index": 0,
        "point": {"rate": round(rate * 60, 6)} if rate else {},
        "load_model": "open",
        "offered_rate_per_s": rate,
        "planned_jobs": planned,
        "started_ns": int(starts.min()) if starts.len() else t_min,  # type: ignore[arg-type]
        "submit_end_ns": int(submits.max()) if submits.len() else t_max,  # type: ignore[arg-type]
        "ended_ns": t_max,
        "status": "complete",
        "chain": chain.to_dict(),
        "agents": agents,
        "background_queue": {"start": None, "end": None},
        "cpu_count": None,
        "late_threshold_ns": DEFAULT_LATE_THRESHOLD_NS,
        "ingested": {"kind": kind},
    }


def read_client_events(path: str | os.PathLike[str]) -> IngestResult:
    """Client events from an event log (``events.arrows`` or ``events.csv``) or a
    ``.jsonl`` file."""
    p = Path(path)
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return read_jsonl(p)
    return IngestResult(events=read_event_log(p, store=False))  # the user's own file


def ingest_edgi_run(
    client: str | os.PathLike[str],
    reports: Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    limits: FetchLimits | None = None,
    overwrite: bool = False,
) -> IngestRunResult:
    """``gridbench ingest edgi``: client events + EDGI reports -> a results directory."""
    check_out_dir(out_dir, overwrite)
    cl = read_client_events(client)
    if cl.events.filter(pl.col("stage") == STAGE_SUBMIT_ACK).is_empty():
        raise IngestError(
            "the client events have no submit_ack events, so no job can be joined to reports",
            where=str(client),
            fix="give the submitter's events (submit_ack with attrs.backend_id = the CE job id)",
        )
    res = ingest_edgi(cl.events, reports, limits=limits)
    warnings = cl.warnings + res.warnings
    tiers = [t for t in res.stats.get("tiers", []) if isinstance(t, str)]
    # a trial's log may already hold these tiers' events (ingested live): replace them
    ours = pl.col("stage").str.extract(r"^(.*)_(?:entry|submit|done|status)$").is_in(tiers)
    client_ev = cl.events.filter(~ours.fill_null(False))
    replaced = cl.events.height - client_ev.height
    if replaced:
        warnings.append(
            f"{client}: {replaced} event(s) of tiers {', '.join(tiers)} were already present; "
            "they were replaced by the ones read from the reports now"
        )
    all_events = concat_events([client_ev, res.events])
    prec = _stage_summary(all_events) if all_events.height else None
    chain = edgi_chain(
        tiers or ("ce", "bridge"),
        dict(zip(prec["stage"].to_list(), prec["precision_ns"].to_list(), strict=True))
        if prec is not None
        else None,
    )
    run = build_run_from_ingest(
        out_dir,
        all_events,
        chain=chain,
        info=IngestInfo(
            "edgi", {"client": str(client), "reports": list(reports)}, warnings, res.stats
        ),
        overwrite=overwrite,
    )
    return IngestRunResult(
        run, all_events.height, all_events.get_column("job").n_unique(), warnings, res.stats
    )


def ingest_jsonl_run(
    file: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    chain: StageChain | None = None,
    overwrite: bool = False,
) -> IngestRunResult:
    """``gridbench ingest jsonl``: a JSON-lines event file -> a results directory."""
    check_out_dir(out_dir, overwrite)
    res = read_jsonl(file)
    if res.events.is_empty():
        raise IngestError(
            "no valid events in the file", where=str(file), fix="see the warnings above"
        )
    ch = chain or infer_chain(res.events)
    run = build_run_from_ingest(
        out_dir,
        res.events,
        chain=ch,
        info=IngestInfo("jsonl", {"file": str(file)}, res.warnings, res.stats),
        overwrite=overwrite,
    )
    return IngestRunResult(
        run, res.events.height, res.events.get_column("job").n_unique(), res.warnings, res.stats
    )
