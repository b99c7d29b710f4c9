"""Job flow's fields of experiment.json that the catalogue shows (``backend`` and
``load_model`` as its target and variant, ``trials_done``/``trials_planned`` in
``gridbench list``), by the types they may hold (None too: not known yet), and their
check. Light at import (no event model, no polars): ``gridbench list`` and the dashboard's
list read them for every run. Re-exported by :mod:`gridbench.jobflow.events.run_folder`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError

TEXT_FIELDS = ("backend", "load_model")
INT_FIELDS = ("trials_planned", "trials_done")


def check_jobflow_experiment(data: Mapping[str, Any], path: Path) -> None:
    """Raise ResultsError when one of job flow's catalogue fields has the wrong type
    (``backend`` a number, ``trials_done`` a string ...)."""
    fix = "the file was damaged or not written by gridbench: restore it or remove the run"
    for key in TEXT_FIELDS:
        if data.get(key) is not None and not isinstance(data[key], str):
            raise ResultsError(f"'{key}' is not a string", where=f"{path}: {key}", fix=fix)
    for key in INT_FIELDS:
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ResultsError(f"'{key}' is not an integer", where=f"{path}: {key}", fix=fix)
