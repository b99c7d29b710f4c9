"""The backend registry (one list: the entry points) and the optional hooks' protocols."""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import SpecError
from gridbench.jobflow.backends import registry
from gridbench.jobflow.backends.base import (
    BulkSubmitter,
    InlineSubmit,
    OrphanStopper,
    ReportPublisher,
    RuntimeInfoSource,
    RuntimeStatsSource,
)
from gridbench.jobflow.backends.command.backend import CommandBackend
from gridbench.jobflow.backends.local import LocalBackend
from gridbench.jobflow.backends.noop import NoopBackend
from gridbench.jobflow.backends.reference import ReferenceBackend
from gridbench.jobflow.backends.sge.backend import SgeBackend
from gridbench.jobflow.backends.slurm.backend import SlurmBackend

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def test_builtins_are_exactly_the_pyproject_entry_points() -> None:
    table = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["gridbench.backends"]
    found = registry.available()
    assert {k: found[k] for k in table} == table
    assert not hasattr(registry, "_BUILTIN")  # no second list


def test_unknown_backend_names_the_field_and_the_choices() -> None:
    with pytest.raises(SpecError) as exc:
        registry.create_backend("nosuch")
    assert exc.value.where == "backend.type"
    assert exc.value.fix is not None and "use one of:" in exc.value.fix
    assert "slurm" in exc.value.fix and "noop" in exc.value.fix


def test_a_builtin_is_created_from_its_entry_point() -> None:
    assert isinstance(registry.create_backend("noop"), NoopBackend)


class _Dist:
    def __init__(self, name: str) -> None:
        self.name = name


class _Ep:
    """What the registry reads of an entry point (``EntryPoint.dist`` is set by
    importlib.metadata's private API, hence a stand-in)."""

    def __init__(self, name: str, value: str, dist: str) -> None:
        self.name, self.value, self.dist = name, value, _Dist(dist)
        self._real = EntryPoint(name, value, registry.ENTRY_POINT_GROUP)

    def load(self) -> Any:
        return self._real.load()


def _ep(name: str, value: str, dist: str) -> _Ep:
    return _Ep(name, value, dist)


def test_a_plugin_cannot_replace_a_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [
        _ep("noop", "evil.backend:Noop", "evil"),
        _ep("noop", "gridbench.jobflow.backends.noop:NoopBackend", "gridbench"),
        _ep("mine", "mypkg.backend:Mine", "mypkg"),
        _ep("mine", "other.backend:Mine", "other"),
    ]

    def fake(group: str) -> list[_Ep]:
        assert group == registry.ENTRY_POINT_GROUP
        return eps

    monkeypatch.setattr(registry, "entry_points", fake)
    assert registry.available() == {
        "noop": "gridbench.jobflow.backends.noop:NoopBackend",
        "mine": "mypkg.backend:Mine",  # the first plugin's
    }
    with pytest.raises(SpecError, match="could not be loaded") as exc:
        registry.create_backend("mine")
    assert exc.value.where == "backend.type"


def test_no_entry_points_at_all_says_how_to_register_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    with pytest.raises(SpecError, match="no backends are registered") as exc:
        registry.create_backend("noop")
    assert exc.value.fix is not None and "pip install" in exc.value.fix


@pytest.mark.parametrize(
    ("cls", "hooks"),
    [
        (LocalBackend, {OrphanStopper}),
        (ReferenceBackend, {ReportPublisher, RuntimeInfoSource}),
        (CommandBackend, {RuntimeInfoSource, RuntimeStatsSource}),
        (SlurmBackend, {BulkSubmitter}),
        (SgeBackend, set()),
        (NoopBackend, {InlineSubmit}),
    ],
)
def test_optional_hooks_are_found_by_isinstance(cls: type[Any], hooks: set[type]) -> None:
    protocols = {
        BulkSubmitter,
        InlineSubmit,
        OrphanStopper,
        ReportPublisher,
        RuntimeInfoSource,
        RuntimeStatsSource,
    }
    obj = object.__new__(cls)  # the check looks at the class's methods only
    assert {p for p in protocols if isinstance(obj, p)} == hooks
