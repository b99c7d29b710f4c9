"""On-disk layout of one experiment's results directory."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError

EXPERIMENT_FILE = "experiment.json"
DEFAULT_ROOT_ENV = "GRIDBENCH_RESULTS"


def default_root() -> Path:
    return Path(os.environ.get(DEFAULT_ROOT_ENV, "results"))


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename), so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, default=str)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(
            "file not found", where=str(path), fix="is this a gridbench results directory?"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(
            f"not valid JSON: {exc}", where=str(path), fix="the file is corrupted"
        ) from None


def slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return s[:60] or "experiment"


@dataclass(frozen=True)
class RunDir:
    """Paths inside one experiment's results directory."""

    path: Path

    @classmethod
    def create(cls, root: Path, name: str) -> RunDir:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        base = root / f"{stamp}-{slug(name)}"
        p, n = base, 1
        while p.exists():
            n += 1
            p = base.with_name(f"{base.name}-{n}")
        (p / "trials").mkdir(parents=True)
        return cls(p)

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        p = Path(path)
        if not (p / EXPERIMENT_FILE).is_file():
            raise ResultsError(
                "not a gridbench results directory (no experiment.json)",
                where=str(p),
                fix="give a directory printed by 'gridbench run' or listed by 'gridbench list'",
            )
        return cls(p)

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def experiment_file(self) -> Path:
        return self.path / EXPERIMENT_FILE

    @property
    def spec_file(self) -> Path:
        return self.path / "spec.yaml"

    @property
    def plan_file(self) -> Path:
        return self.path / "plan.json"

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.json"

    def trial_dir(self, trial_id: str) -> Path:
        return self.path / "trials" / trial_id

    def trial_ids(self) -> list[str]:
        d = self.path / "trials"
        return sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []

    def read_experiment(self) -> dict[str, Any]:
        data = read_json(self.experiment_file)
        if not isinstance(data, dict):
            raise ResultsError("experiment.json is not an object", where=str(self.experiment_file))
        return data

    def update_experiment(self, **fields: Any) -> dict[str, Any]:
        data = self.read_experiment() if self.experiment_file.exists() else {}
        data.update(fields)
        write_json(self.experiment_file, data)
        return data


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
