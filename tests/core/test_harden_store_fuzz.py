"""Fuzz the results store (issue 15): hostile experiment.json, metrics.json and plan.json
contents and links planted in one run of a small real store. ``list``, ``show``,
``analyze``, ``report`` and ``cleanup --dry-run`` give a result or one clear error, never
a traceback or an internal error, and never write outside the run."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridbench.cli import main
from test_net_analysis import make_run, ping, sockperf

TARGETS = ("experiment.json", "metrics.json", "plan.json")
SENTINEL = "sentinel: must stay as it is\n"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
#: Documents with gridbench's own keys, each holding any JSON (``created`` a number,
#: ``pid`` a string, ``kind`` a list ...).
typed_wrong = st.fixed_dictionaries(
    {},
    optional={
        k: json_values
        for k in ("id", "name", "kind", "status", "created", "pid", "schema", "environments")
    },
)
hostile_bytes = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    typed_wrong.map(lambda v: json.dumps(v).encode()),
    st.integers(4300, 6000).map(lambda n: b'{"n": ' + b"9" * n + b"}"),
    st.integers(1000, 200_000).map(lambda n: b"[" * n + b"]" * n),
    st.sampled_from([b"", b"NaN", b'{"x": Infinity}', b"\xff\xfe\x00", b'{"name": "caf\xe9"}']),
    st.binary(max_size=64),
)
#: What is planted: bytes, or a link to a file or a folder outside the run.
planted = st.one_of(
    hostile_bytes.map(lambda b: ("bytes", b)),
    st.sampled_from([("link-file", b""), ("link-dir", b"")]),
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results root holding one analysed net run, copied for each example."""
    root = tmp_path_factory.mktemp("fuzz") / "results"
    run = make_run(root, [ping("tcp", "host", 64, 0, [0.1, 0.2]), sockperf("host", 64, 0.05)])
    assert main(["analyze", str(run.path)]) == 0
    return root


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def plant(run: Path, target: str, what: tuple[str, bytes], outside: Path) -> None:
    path = run / target
    path.unlink(missing_ok=True)
    kind, content = what
    if kind == "bytes":
        path.write_bytes(content)
    elif kind == "link-file":
        path.symlink_to(outside / "sentinel.json")
    else:
        path.symlink_to(outside, target_is_directory=True)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(target=st.sampled_from(TARGETS), what=planted)
def test_hostile_files_give_a_result_or_a_clear_error(
    template: Path, capsys: pytest.CaptureFixture[str], target: str, what: Any
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        shutil.copytree(template, root, symlinks=True)
        outside = Path(tmp) / "outside"
        outside.mkdir()
        (outside / "sentinel.json").write_text(SENTINEL)
        before = snapshot(outside)
        [run] = list(root.iterdir())
        plant(run, target, what, outside)
        for argv in (
            ["list"],
            ["list", "--json"],
            ["show", run.name],
            ["analyze", str(run)],
            ["report", str(run)],
            ["cleanup", "--dry-run", str(run)],
        ):
            capsys.readouterr()
            code = main([*argv[:1], "--results", str(root), *argv[1:]])
            out = capsys.readouterr()
            text = out.out + out.err
            assert "Traceback" not in text and "internal error" not in text, (argv, text)
            assert code in (0, 1, 2, 3), (argv, code, text)
        assert snapshot(outside) == before
        assert sorted(p.name for p in Path(tmp).iterdir()) == ["outside", "results"]
