"""A study run in the results store: the folder, its spec.yaml and experiment.json.

Delivery in the browser and import both start here; what happens after lives in the
append-only log (study.jsonl, :mod:`gridbench.study.records`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Literal

from gridbench.errors import ResultsError
from gridbench.states import COMPLETE
from gridbench.store.layout import RunDir, now_iso
from gridbench.study import records as rec
from gridbench.study.model import StudySpec

Delivery = Literal["browser", "import"]


def create_study_run(
    root: Path,
    spec: StudySpec,
    data: dict[str, Any],
    *,
    delivery: Delivery,
    out: Path | None = None,
    participants: int | None = None,
) -> RunDir:
    """Create the run folder of a study: under ``root`` named after the spec (as every
    family's runs are), or exactly ``out`` when given (``study import --out RUN_DIR``, as
    ``gridbench ingest --out``: it must not exist or be empty). Browser delivery starts
    "running"; an import is "complete" once its records are in (:func:`mark_complete`)."""
    try:
        run = _make_folder(root, spec.name, out)
    except OSError as exc:
        raise ResultsError(
            f"cannot create the run folder: {exc.strerror or exc}",
            where=str(out or root),
            fix="give a results root (--results) or --out where you may write",
        ) from None
    try:
        run.begin(
            "study",
            spec.name,
            data,
            status="running",
            tools=[t.id for t in spec.tools],
            delivery=delivery,
            participants=len(spec.participants) if participants is None else participants,
        )
        rec.create_log(run.path)
    except OSError as exc:
        discard_run(run)  # a run without its spec or record is no run
        raise ResultsError(
            f"cannot write the run's files: {exc.strerror or exc}",
            where=str(run.path),
            fix="free disk space or fix the folder's permissions",
        ) from None
    return run


def _make_folder(root: Path, name: str, out: Path | None) -> RunDir:
    if out is None:
        return RunDir.create(root, name)
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise ResultsError(
            "output directory already exists and is not empty",
            where=str(out),
            fix="choose another --out, or remove the directory first",
        )
    out.mkdir(parents=True, exist_ok=True)
    return RunDir(out)


def mark_complete(run: RunDir, **fields: Any) -> None:
    """An imported study is complete once its records are in."""
    run.update_experiment(status=COMPLETE, finished=now_iso(), **fields)


def discard_run(run: RunDir) -> None:
    """Remove a run folder this command just created and that holds nothing yet worth
    keeping (an import whose records could not be written)."""
    if not run.path.is_symlink() and run.path.is_dir():
        shutil.rmtree(run.path)
