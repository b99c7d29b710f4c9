"""String references to gridbench code cannot rot.

Some of our code is named by strings rather than imported: a family's parts
(``rules_at = "gridbench.io.validity:IO_VALIDITY_RULES"``), report sections, lazy import
tables, the entry points in pyproject.toml, and the modules started with ``python -m``.
A move or a rename breaks them only when they are used, maybe in a run hours later. This
finds every such string in the source (a string constant that is a dotted gridbench name,
optionally ``:attribute``) and resolves it: the module is imported and the attribute
chain looked up. A bare module name is only located (``find_spec``), not run: several are
``-m`` entry modules. In-process and without subprocesses.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import keyword
import re
import tomllib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "gridbench"
PYPROJECT = ROOT / "pyproject.toml"

#: a dotted name in gridbench, optionally followed by ``:attribute.chain``
REF = re.compile(r"^gridbench(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?$")
#: gridbench-looking strings that name no Python code (with where they come from)
NOT_CODE = {"gridbench.Echo": "the gRPC service's full name (messaging/transports/grpc_echo.py)"}

#: attr: ``module:attribute``; module: a module (or an entry-point group); main: a module
#: run with ``python -m``, so a package needs a ``__main__``
Kind = Literal["attr", "module", "main"]


@dataclass(frozen=True)
class Ref:
    text: str
    kind: Kind
    where: str


def _is_ref(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and bool(REF.match(node.value))
    )


def _is_python(node: ast.AST) -> bool:
    """``sys.executable``: an argv whose ``-m`` is Python's (bonnie++ has a ``-m`` too)."""
    return isinstance(node, ast.Attribute) and node.attr == "executable"


def _lazy_table(node: ast.Dict) -> bool:
    """``{"name": "gridbench.module", ...}``: attributes imported on first use."""
    return bool(node.keys) and all(
        isinstance(k, ast.Constant)
        and isinstance(k.value, str)
        and k.value.isidentifier()
        and not keyword.iskeyword(k.value)
        and isinstance(v, ast.Constant)
        and _is_ref(v)
        and str(v.value).startswith("gridbench.")  # a module, not the word ("by": "gridbench")
        and ":" not in str(v.value)
        for k, v in zip(node.keys, node.values, strict=True)
    )


def refs_in_source(text: str, where: str) -> list[Ref]:
    """Every string reference to gridbench code in Python source ``text``."""
    tree = ast.parse(text)
    # pieces of an f-string are not whole names
    pieces = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    kinds: dict[int, Ref] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and _lazy_table(node):
            for k, v in zip(node.keys, node.values, strict=True):
                assert isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                kinds[id(v)] = Ref(f"{v.value}:{k.value}", "attr", f"{where}:{v.lineno}")
        elif isinstance(node, ast.List | ast.Tuple) and any(map(_is_python, node.elts)):
            for before, item in zip(node.elts, node.elts[1:], strict=False):
                if isinstance(before, ast.Constant) and before.value == "-m" and _is_ref(item):
                    assert isinstance(item, ast.Constant)
                    kinds[id(item)] = Ref(item.value, "main", f"{where}:{item.lineno}")
    out: list[tuple[int, int, Ref]] = []
    for node in ast.walk(tree):
        if not _is_ref(node) or id(node) in pieces:
            continue
        assert isinstance(node, ast.Constant)
        value = str(node.value)
        kind: Kind = "attr" if ":" in value else "module"
        ref = kinds.get(id(node), Ref(value, kind, f"{where}:{node.lineno}"))
        out.append((node.lineno, node.col_offset, ref))
    return [r for *_, r in sorted(out, key=lambda x: (x[0], x[1]))]


def source_refs() -> list[Ref]:
    out: list[Ref] = []
    for path in sorted(SRC.rglob("*.py")):
        out += refs_in_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return [r for r in out if r.text not in NOT_CODE]


def pyproject_refs(data: dict[str, object]) -> Iterator[Ref]:
    """The console scripts and entry points declared in pyproject.toml."""
    project = data.get("project")
    assert isinstance(project, dict)
    scripts = project.get("scripts", {})
    for name, target in scripts.items():
        yield Ref(target, "attr", f"pyproject.toml [project.scripts] {name}")
    for group, points in project.get("entry-points", {}).items():
        for name, target in points.items():
            yield Ref(target, "attr", f"pyproject.toml [project.entry-points.{group!r}] {name}")


def entry_point_groups(data: dict[str, object]) -> set[str]:
    project = data.get("project")
    assert isinstance(project, dict)
    return set(project.get("entry-points", {}))


def check_ref(text: str, kind: Kind = "attr", groups: Collection[str] = ()) -> str | None:
    """What is wrong with the reference ``text`` (None: it resolves)."""
    module, _, attrs = text.partition(":")
    if kind == "attr":
        try:
            obj = importlib.import_module(module)
        except Exception as exc:  # any failure to import is the finding
            return f"cannot import {module!r}: {type(exc).__name__}: {exc}"
        for name in attrs.split(".") if attrs else ():
            if not hasattr(obj, name):
                return f"{getattr(obj, '__name__', obj)!r} has no attribute {name!r}"
            obj = getattr(obj, name)
        return None
    if kind == "module" and text in groups:
        return None
    try:
        spec = importlib.util.find_spec(text)
    except (ImportError, ValueError) as exc:
        return f"cannot locate {text!r}: {type(exc).__name__}: {exc}"
    if spec is None:
        return f"no module {text!r}"
    package = spec.submodule_search_locations is not None
    if kind == "main" and package and importlib.util.find_spec(f"{text}.__main__") is None:
        return f"package {text!r} has no __main__, so 'python -m {text}' fails"
    return None


def _problems(refs: list[Ref], groups: Collection[str] = ()) -> list[str]:
    out = []
    for r in refs:
        problem = check_ref(r.text, r.kind, groups)
        if problem is not None:
            out.append(f"{r.where}: {r.text!r}: {problem}")
    return out


@pytest.fixture(scope="module")
def pyproject() -> dict[str, object]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


def test_every_string_reference_in_the_source_resolves(pyproject: dict[str, object]) -> None:
    refs = source_refs()
    texts = {r.text for r in refs}
    # the scan finds the kinds of reference it is meant for (else it checks nothing)
    assert "gridbench.io.validity:IO_VALIDITY_RULES" in texts  # a family's part
    assert "gridbench.jobflow.report.batch:batch_table" in texts  # a report section
    assert "gridbench.jobflow.spec.load:load_spec" in texts  # a lazy import table
    assert Ref("gridbench.jobflow.reference", "main", "") in {
        Ref(r.text, r.kind, "") for r in refs
    }  # python -m
    assert "gridbench.compare.command:cmd_compare" in texts  # a declared command's function
    assert len(refs) > 40
    assert _problems(refs, entry_point_groups(pyproject)) == []


def test_every_entry_point_in_pyproject_resolves(pyproject: dict[str, object]) -> None:
    refs = list(pyproject_refs(pyproject))
    assert {r.text for r in refs} >= {"gridbench.cli:main", "gridbench.io.family:FAMILY"}
    assert _problems(refs) == []


def test_entry_point_groups_named_in_the_source_are_declared(
    pyproject: dict[str, object],
) -> None:
    groups = entry_point_groups(pyproject)
    assert {"gridbench.backends", "gridbench.families"} <= groups
    assert check_ref("gridbench.families", "module", groups) is None
    assert check_ref("gridbench.families", "module", ()) == "no module 'gridbench.families'"


def test_a_wrong_reference_is_reported() -> None:
    missing_attr = check_ref("gridbench.io.validity:NO_SUCH_RULES")
    assert missing_attr == "'gridbench.io.validity' has no attribute 'NO_SUCH_RULES'"
    deep = check_ref("gridbench.io.family:FAMILY.no_such_part")
    assert deep is not None and "no attribute 'no_such_part'" in deep
    no_module = check_ref("gridbench.jobflow.events.edgi_old:ingest_edgi")
    assert no_module is not None and no_module.startswith(
        "cannot import 'gridbench.jobflow.events.edgi_old'"
    )
    assert check_ref("gridbench.io.no_such_module", "module") == (
        "no module 'gridbench.io.no_such_module'"
    )
    assert check_ref("gridbench.io", "main") == (
        "package 'gridbench.io' has no __main__, so 'python -m gridbench.io' fails"
    )
    assert check_ref("gridbench.io.validity:IO_VALIDITY_RULES") is None


def test_the_scan_finds_and_reports_made_up_references() -> None:
    source = (
        'rules_at = "gridbench.io.validity:IO_VALIDITY_RULE"\n'
        'argv = [sys.executable, "-m", "gridbench.io"]\n'
        '_MARKS = {"by": "gridbench"}  # a word, not a lazy import table\n'
        'bonnie = ["bonnie++", "-m", "gridbench"]  # not Python\'s -m\n'
        '_WHERE = {"load_specs": "gridbench.jobflow.spec.load"}\n'
        'label = f"gridbench.{name}"  # a piece of an f-string: not a reference\n'
        '"""A docstring naming gridbench.io.validity:IO_VALIDITY_RULES in prose."""\n'
    )
    refs = refs_in_source(source, "made_up.py")
    assert refs == [
        Ref("gridbench.io.validity:IO_VALIDITY_RULE", "attr", "made_up.py:1"),
        Ref("gridbench.io", "main", "made_up.py:2"),
        Ref("gridbench", "module", "made_up.py:3"),
        Ref("gridbench", "module", "made_up.py:4"),
        Ref("gridbench.jobflow.spec.load:load_specs", "attr", "made_up.py:5"),
    ]
    problems = _problems(refs)
    assert len(problems) == 3
    assert "made_up.py:1: " in problems[0] and "no attribute 'IO_VALIDITY_RULE'" in problems[0]
    assert "made_up.py:2: " in problems[1] and "has no __main__" in problems[1]
    assert "made_up.py:5: " in problems[2] and "no attribute 'load_specs'" in problems[2]
