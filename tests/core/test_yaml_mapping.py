"""One YAML mapping reader (``gridbench.yamltext.parse_mapping``) behind the command
presets, the stamp declarations, the reference grid's configuration and a run's
spec.yaml: hardened like a spec (no tags, no deep nesting, no huge document), each error
naming what, where (with the line) and the caller's fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench.errors import ResultsError, SpecError
from gridbench.jobflow.backends.command import presets
from gridbench.jobflow.events.stamps import library
from gridbench.jobflow.reference.config import read_config_file
from gridbench.store.layout import RunDir
from gridbench.yamltext import MAX_YAML_BYTES, parse_mapping

BAD = "a: 1\nb: [\n c: d: e\n"


def test_bad_yaml_names_what_the_line_and_the_fix() -> None:
    with pytest.raises(SpecError) as err:
        parse_mapping(BAD, "x.yaml", what="preset 'x'", fix="a preset holds options")
    e = err.value
    assert e.message.startswith("preset 'x' is not valid YAML: ") and e.where == "x.yaml:3"
    assert e.fix is not None and e.fix.endswith("a preset holds options")
    # given a place (the spec field that named the file), the file's line is in the message
    with pytest.raises(SpecError) as err:
        parse_mapping(BAD, "x.yaml", what="preset 'x'", fix="f", where="backend.options.preset")
    assert err.value.where == "backend.options.preset" and "(x.yaml:3)" in err.value.message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("- 1\n- 2\n", "is not a mapping"),
        ("a: !!python/object:os.system x\n", "YAML tag '!!python/object:os.system'"),
        ("a: " + "[" * 100 + "]" * 100 + "\n", "nested too deeply"),
        ("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
            f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
            for p, c in zip("abcde", "bcdef", strict=True)
        ), "expands to more than"),
        ("a: " + "x" * (MAX_YAML_BYTES + 1) + "\n", "larger than 1 MiB"),
    ],
)  # fmt: skip
def test_what_a_spec_refuses_a_mapping_refuses(text: str, said: str) -> None:
    with pytest.raises(ResultsError) as err:
        parse_mapping(text, "f.yaml", what="spec.yaml", fix="restore it", error=ResultsError)
    assert said in err.value.message and err.value.message.startswith("spec.yaml")


def test_plain_data_and_empty() -> None:
    assert parse_mapping("# nothing\n", "e.yaml", what="x", fix="f") == {}
    data = parse_mapping("a: 1\nb: [x, 2.5, null]\nc: 2026-01-01\n", "o.yaml", what="x", fix="f")
    assert data == {"a": 1, "b": ["x", 2.5, None], "c": "2026-01-01"}
    assert type(data) is dict and type(data["a"]) is int


def test_the_four_readers_use_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    with pytest.raises(SpecError, match=r"stamp declaration .* is not valid YAML"):
        library.load(str(bad), "stamps.use")
    with pytest.raises(SpecError, match=r"preset .* is not valid YAML"):
        presets.load(str(bad))
    with pytest.raises(SpecError, match="the grid configuration is not valid YAML") as err:
        read_config_file(bad)
    assert err.value.where == f"{bad}:3"
    run = tmp_path / "run"
    run.mkdir()
    (run / "experiment.json").write_text('{"id": "r"}')
    (run / "spec.yaml").write_text("- not\n- a mapping\n")
    with pytest.raises(ResultsError, match=r"spec\.yaml is not a mapping"):
        RunDir(run).read_spec()
    (run / "spec.yaml").write_text("name: ok\n")
    assert RunDir(run).read_spec() == ("name: ok\n", {"name": "ok"})
