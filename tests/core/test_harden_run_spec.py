"""A run's spec.yaml is a store file like the others (foreign input): every family's
``analyze`` reads it without following a link, refuses a FIFO or device at once, and a
missing one is one clear error, never a traceback. And an io run's result rows are
checked for every field the analysis reads (a wrong type or an impossible amount names
the row). Real runs of the session (``family_runs``), copied before they are damaged."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from family_runs import copy_run, gb
from gridbench.store import raw_files

SECRET = "root:planted-secret-outside-the-run:0:0\n"


def _copy(run: Path, tmp: Path) -> Path:
    return copy_run(run, tmp / "results")


def _clear_error(p: object, *words: str) -> str:
    out = p.stdout + p.stderr  # type: ignore[attr-defined]
    assert p.returncode == 2, out[-2000:]  # type: ignore[attr-defined]
    assert "Traceback" not in out and "internal error" not in out, out[-2000:]
    assert "fix:" in p.stderr, p.stderr  # type: ignore[attr-defined]
    for w in words:
        assert w in p.stderr, (w, p.stderr)  # type: ignore[attr-defined]
    return out


@pytest.fixture(params=["jobflow", "io", "net"])
def any_run(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return _copy(request.getfixturevalue(f"{request.param}_run"), tmp_path)


def test_a_linked_spec_is_refused_and_never_shown(any_run: Path, tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    spec = any_run / "spec.yaml"
    spec.unlink()
    spec.symlink_to(secret)
    p = gb(any_run.parent, "analyze", str(any_run))
    out = _clear_error(p, "spec.yaml", "symbolic link")
    assert "planted-secret" not in out


def test_a_fifo_spec_is_refused_at_once(any_run: Path) -> None:
    spec = any_run / "spec.yaml"
    spec.unlink()
    os.mkfifo(spec)  # a reader that opened it blocking would wait for a writer for ever
    p = gb(any_run.parent, "analyze", str(any_run))  # gb's own time-out bounds it
    _clear_error(p, "spec.yaml", "not a regular file")


def test_an_io_run_without_its_spec_is_one_clear_error(io_run: Path, tmp_path: Path) -> None:
    run = _copy(io_run, tmp_path)
    (run / "spec.yaml").unlink()
    for command in ("analyze", "report"):
        _clear_error(gb(run.parent, command, str(run)), "spec.yaml", "no spec.yaml")


def _edit_first_row(run: Path, **fields: object) -> None:
    """Change the first iozone row of rows.jsonl and record the file's new size (so that
    the raw-data check, which refuses an edited file, lets the row check speak)."""
    path = run / "rows.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row.update(fields)
    lines[0] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    exp = json.loads((run / "experiment.json").read_text())
    exp[raw_files.KEY]["rows.jsonl"] = path.stat().st_size  # the other files' sizes kept
    (run / "experiment.json").write_text(json.dumps(exp))


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"rep": "one"}, "'rep'"),
        ({"rep": -1}, "'rep'"),
        ({"kbps": -1}, "'kbps'"),
        ({"kbps": 1e308}, "'kbps'"),
        ({"runtime_s": True}, "'runtime_s'"),
        ({"bytes": 2.5}, "'bytes'"),
    ],
)
def test_an_io_row_with_a_bad_field_names_the_row(
    io_run: Path, tmp_path: Path, fields: dict[str, object], named: str
) -> None:
    run = _copy(io_run, tmp_path)
    assert gb(run.parent, "analyze", str(run)).returncode == 0  # intact, it analyses
    _edit_first_row(run, **fields)
    _clear_error(gb(run.parent, "analyze", str(run)), "rows.jsonl:1", named)


def test_an_unknown_family_is_named_with_its_run_before_any_record(
    net_run: Path, tmp_path: Path
) -> None:
    run = _copy(net_run, tmp_path)
    exp = json.loads((run / "experiment.json").read_text())
    exp["kind"] = "bogus"
    (run / "experiment.json").write_text(json.dumps(exp))
    p = gb(run.parent, "show", str(run))
    _clear_error(p, f"{run / 'experiment.json'}: kind", "unknown benchmark family 'bogus'")
    assert '"id"' not in p.stdout  # the record is not shown before the error


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda t: t.update(started_ns=10**30), "started_ns is '1" + "0" * 30),
        (lambda t: t.update(events="83"), "events is '83', not a 64-bit integer"),
        (lambda t: t.update(offered_rate_per_s=True), "offered_rate_per_s is 'True'"),
        (lambda t: t.update(planned_jobs=-5), "planned_jobs is -5, below 0"),
        (lambda t: t.update(point_index=-1), "point_index is -1, below 0"),
        (lambda t: t["chain"]["stages"][0].update(precision_ns="x"), "precision_ns is 'x'"),
        (lambda t: t["chain"]["stages"][0].update(name=5), "name is not a string"),
        (lambda t: t["chain"]["segments"][0].update(component="yes"), "component is not true"),
    ],
)
def test_a_trial_json_field_of_the_wrong_type_is_named(
    jobflow_run: Path, tmp_path: Path, edit: Any, named: str
) -> None:
    """trial.json is foreign input too: a string, a boolean or a 10^30 where the analysis
    reads a number (once a TypeError or a polars overflow deep in it) names the field."""
    run = _copy(jobflow_run, tmp_path)
    path = run / "trials" / "p00-t00" / "trial.json"
    trial = json.loads(path.read_text())
    edit(trial)
    path.write_text(json.dumps(trial))
    out = _clear_error(gb(run.parent, "analyze", str(run)), "trial.json", named)
    assert "wrong type" in out
