"""On-disk layout of one experiment's results directory."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError, resource_error
from gridbench.states import run_state
from gridbench.store.safe_open import CAPS, parse_json, read_store_text, refuse_links
from gridbench.store.safe_open import EXPERIMENT_FILE as EXPERIMENT_FILE  # re-exported

DEFAULT_ROOT_ENV = "GRIDBENCH_RESULTS"


def default_root() -> Path:
    return Path(os.environ.get(DEFAULT_ROOT_ENV, "results"))


def results_root(given: str | None) -> Path:
    """The results root: ``given`` (``--results``), else $GRIDBENCH_RESULTS or ./results;
    a file there is a GridbenchError with the fix."""
    from gridbench.errors import GridbenchError

    root = Path(given) if given else default_root()
    if root.exists() and not root.is_dir():
        raise GridbenchError(
            "the results root is a file, not a directory",
            where=str(root),
            fix="give --results (or GRIDBENCH_RESULTS) a directory",
        )
    return root


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` through a temporary file and a rename, so readers never see half;
    never through a link (the file or its folder)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        refuse_links(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise resource_error(exc, path) or exc from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        err = resource_error(exc, path) if isinstance(exc, OSError) else None
        if err is None:
            raise
        raise err from None


@contextmanager
def atomic_output(path: Path) -> Iterator[Path]:
    """A temporary path to write ``path`` through, for a writer that takes a path (polars,
    pyarrow, a copy, scp): it lies in a new folder only this process may write
    (``mkdtemp``: a fresh random name, mode 0700), so no link can be planted there; after
    the block it is renamed over ``path`` (a rename replaces a link, never writes through
    it). Refused when ``path`` or a folder up to its run is a link (:func:`refuse_links`);
    nothing is left behind when the block fails."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        refuse_links(path)
        folder = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    except OSError as exc:
        raise resource_error(exc, path) or exc from None
    try:
        yield folder / path.name
        os.replace(folder / path.name, path)
    except OSError as exc:
        raise resource_error(exc, path) or exc from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` as :func:`write_text_atomic` writes text."""
    with atomic_output(path) as tmp, open(tmp, "xb") as fh:
        fh.write(data)


def json_safe(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become null, numpy scalars Python ones, tuples lists."""
    np = sys.modules.get("numpy")  # none can exist before numpy is imported: not imported here
    if np is not None and isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def write_json(path: Path, data: Any, *, indent: int | None = 1) -> Path:
    """Write JSON atomically; NaN and infinities are written as null."""
    seps = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(json_safe(data), indent=indent, separators=seps, allow_nan=False, default=str)
    write_text_atomic(path, text + "\n")
    return path


def read_json(
    path: Path,
    *,
    missing_fix: str = "is this a gridbench results directory?",
    bad_fix: str = "the file may be truncated; re-run the trial or repair it",
    kind: str = "json",
) -> Any:
    """A JSON file of the store, or ResultsError naming the file, the line and the fix
    (``missing_fix`` when it is absent, ``bad_fix`` when it is not JSON). Read through
    :mod:`gridbench.store.safe_open`: no link followed inside the run, at most
    ``CAPS[kind]`` bytes, strict UTF-8, hostile JSON refused."""
    try:
        text = read_store_text(path, cap=CAPS[kind])
    except FileNotFoundError:
        raise ResultsError("file not found", where=str(path), fix=missing_fix) from None
    return parse_json(text, path, fix=bad_fix)


#: Fields of experiment.json that generic code (list, compare, the dashboard) reads, by
#: the types they may hold (None is allowed too: a field not known yet). A family checks
#: its own fields where it reads them.
_TEXT_FIELDS = ("id", "name", "kind", "status", "created", "verdict")
_INT_FIELDS = ("pid",)


def check_experiment(data: Any, path: Path) -> None:
    """Raise ResultsError when experiment.json is not an object or a catalogue field has
    the wrong type (``created`` a number, ``pid`` a string ...)."""
    fix = "the file was damaged or not written by gridbench: restore it or remove the run"
    if not isinstance(data, dict):
        raise ResultsError("experiment.json is not a JSON object", where=str(path), fix=fix)
    for key in _TEXT_FIELDS:
        if data.get(key) is not None and not isinstance(data[key], str):
            raise ResultsError(f"'{key}' is not a string", where=f"{path}: {key}", fix=fix)
    for key in _INT_FIELDS:
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ResultsError(f"'{key}' is not an integer", where=f"{path}: {key}", fix=fix)


def slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return s[:60] or "experiment"


#: runs of one name :meth:`RunDir.create` makes within one second (``-2``, ``-3``…)
MAX_SAME_NAME = 10_000


@dataclass(frozen=True)
class RunDir:
    """Paths inside one experiment's results directory."""

    path: Path

    @classmethod
    def create(cls, root: Path, name: str) -> RunDir:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        base = root / f"{stamp}-{slug(name)}"
        root.mkdir(parents=True, exist_ok=True)
        # the folder is taken by mkdir itself, never by a look first: two runs of one name
        # in one second (two processes, or two /start requests) each get their own
        for n in range(1, MAX_SAME_NAME + 1):
            p = base if n == 1 else base.with_name(f"{base.name}-{n}")
            try:
                p.mkdir()
            except FileExistsError:
                continue
            return cls(p)
        raise ResultsError(
            f"{MAX_SAME_NAME} runs named {slug(name)!r} were started within one second",
            where=str(root),
            fix="wait a second, or give the runs different names",
        )

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

    def read_experiment(self) -> dict[str, Any]:
        """experiment.json, checked: an object whose catalogue fields have their types."""
        data = read_json(self.experiment_file, kind="experiment")
        check_experiment(data, self.experiment_file)
        result: dict[str, Any] = data
        if isinstance(result.get("status"), str):  # an older run's word, read as today's
            result["status"] = run_state(result["status"])
        return result

    def read_experiment_of(self, kind: str, what: str) -> dict[str, Any]:
        """experiment.json (:meth:`read_experiment`) of a run of ``kind``, else one
        ResultsError naming the file and the family (``what``: "storage (io)")."""
        exp = self.read_experiment()
        if exp.get("kind") != kind:
            raise ResultsError(
                f"not a {what} results directory (kind {exp.get('kind')!r})",
                where=str(self.experiment_file),
                fix="use 'gridbench analyze RUN' or 'gridbench report RUN': each finds the "
                "run's family by itself",
            )
        return exp

    def read_spec(self) -> tuple[str, Any]:
        """The spec as run: its YAML text and the parsed document ('' and None when the run
        has no spec.yaml). The file is foreign input: bad YAML is a ResultsError."""
        try:
            text = read_store_text(self.spec_file, cap=CAPS["spec"], base=self.path)
        except FileNotFoundError:
            return "", None
        from gridbench.yamltext import parse_mapping

        data = parse_mapping(
            text,
            str(self.spec_file),
            what="spec.yaml",
            fix="restore the file from the spec the run was started with",
            error=ResultsError,
        )
        return text, data

    def spec_text(self) -> str:
        """The spec as run (its YAML text, read as :meth:`read_spec` does: never through a
        link, bounded); a ResultsError naming the file when the run has none."""
        text, _ = self.read_spec()
        if not text:
            raise ResultsError(
                "the run has no spec.yaml (or it is empty)",
                where=str(self.spec_file),
                fix="restore spec.yaml from the spec the run was started with",
            )
        return text

    def begin(self, kind: str, name: str, spec_data: Any, *, status: str, **fields: Any) -> None:
        """Record a new run of family ``kind``: the spec as run (``spec.yaml``, written
        atomically) and experiment.json with its id, name, kind, status and creation time,
        then the family's own ``fields``."""
        from gridbench.yamltext import dump_yaml

        write_text_atomic(self.spec_file, dump_yaml(spec_data))
        self.update_experiment(
            id=self.id, name=name, kind=kind, status=status, created=now_iso(), **fields
        )

    def update_experiment(self, **fields: Any) -> dict[str, Any]:
        data = self.read_experiment() if os.path.lexists(self.experiment_file) else {}
        data.update(fields)
        write_json(self.experiment_file, data)
        return data


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
