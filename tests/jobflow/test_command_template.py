"""Argv templates: placeholders substituted inside single items, lists expanded or joined."""

from __future__ import annotations

import pytest

from gridbench.jobflow.backends.command.template import (
    ArgvTemplate,
    Placeholder,
    TemplateError,
    TextTemplate,
    parse_item,
)

ALLOWED = {"id", "ids", "name", "command", "url", "extra"}
LISTS = {"ids", "command", "extra"}


def test_parse_item_splits_text_and_placeholders() -> None:
    assert parse_item("--job-name={name}") == ("--job-name=", Placeholder("name"))
    assert parse_item("{url}/arex") == (Placeholder("url"), "/arex")
    assert parse_item("plain") == ("plain",)
    assert parse_item("") == ()


def test_braces_that_are_not_placeholders_stay_literal() -> None:
    assert parse_item("%i %T") == ("%i %T",)
    assert parse_item('{"a": 1}') == ('{"a": 1}',)
    assert parse_item("{{name}}") == ("{name}",)
    assert parse_item("{ name }") == ("{ name }",)
    t = ArgvTemplate.parse(["prog", "{{id}}={id}"], ALLOWED, LISTS)
    assert t.render({"id": "42"}) == ["prog", "{id}=42"]


def test_scalar_values_stay_inside_their_item() -> None:
    t = ArgvTemplate.parse(["arcsub", "-c", "ARC1:{url}/arex", "{name}"], ALLOWED, LISTS)
    argv = t.render({"url": "ce.example.org:443", "name": "a b; c"})
    assert argv == ["arcsub", "-c", "ARC1:ce.example.org:443/arex", "a b; c"]


def test_list_placeholder_as_whole_item_expands() -> None:
    t = ArgvTemplate.parse(["scancel", "{ids}", "--", "{command}"], ALLOWED, LISTS)
    argv = t.render({}, {"ids": ["1", "2 3"], "command": ["/bin/echo", "x y"]})
    assert argv == ["scancel", "1", "2 3", "--", "/bin/echo", "x y"]
    assert t.render({}, {"ids": [], "command": []}) == ["scancel", "--"]


def test_ids_joined_into_one_item() -> None:
    t = ArgvTemplate.parse(["squeue", "-j", "{ids}"], ALLOWED, LISTS, {"ids": ","})
    assert t.render({}, {"ids": ["1", "2", "3"]}) == ["squeue", "-j", "1,2,3"]
    t = ArgvTemplate.parse(["squeue", "--jobs={ids}"], ALLOWED, LISTS, {"ids": ","})
    assert t.render({}, {"ids": ["7", "8"]}) == ["squeue", "--jobs=7,8"]


def test_embedded_list_without_join_is_rejected_with_a_fix() -> None:
    with pytest.raises(TemplateError, match="ids_join"):
        ArgvTemplate.parse(["squeue", "--jobs={ids}"], ALLOWED, LISTS)
    with pytest.raises(TemplateError, match="item of its own"):
        ArgvTemplate.parse(["sbatch", "--wrap={command}"], ALLOWED, LISTS)
    with pytest.raises(TemplateError, match="item of its own"):
        ArgvTemplate.parse(["prog", "-x{extra}"], ALLOWED, LISTS)


def test_unknown_placeholder_names_the_available_ones() -> None:
    with pytest.raises(TemplateError) as exc:
        ArgvTemplate.parse(["prog", "{jobid}"], ALLOWED, LISTS)
    msg = str(exc.value)
    assert "{jobid}" in msg and "item 1" in msg and "{id}" in msg and "{url}" in msg


def test_empty_program_and_empty_argv_are_rejected() -> None:
    with pytest.raises(TemplateError, match="empty"):
        ArgvTemplate.parse([], ALLOWED, LISTS)
    with pytest.raises(TemplateError, match="item 0"):
        ArgvTemplate.parse(["", "x"], ALLOWED, LISTS)
    with pytest.raises(TemplateError, match="item 0"):
        ArgvTemplate.parse(["{command}"], ALLOWED, LISTS)
    t = ArgvTemplate.parse(["{url}"], ALLOWED, LISTS)
    with pytest.raises(TemplateError, match="empty"):
        t.render({"url": ""})


def test_nul_bytes_are_refused() -> None:
    t = ArgvTemplate.parse(["prog", "{id}", "{ids}"], ALLOWED, LISTS)
    with pytest.raises(TemplateError, match="NUL"):
        t.render({"id": "a\x00b"}, {"ids": []})
    with pytest.raises(TemplateError, match="NUL"):
        t.render({"id": "a"}, {"ids": ["x\x00"]})


def test_missing_value_is_an_error() -> None:
    t = ArgvTemplate.parse(["prog", "{name}"], ALLOWED, LISTS)
    with pytest.raises(TemplateError, match=r"no value for \{name\}"):
        t.render({})


def test_names_and_text_templates() -> None:
    t = ArgvTemplate.parse(["p", "{id}", "{url}/x"], ALLOWED, LISTS)
    assert t.names() == {"id", "url"}
    s = TextTemplate.parse("#!/bin/sh\n{name}\n{{literal}}\n", {"name"})
    assert s.render({"name": "job 1"}) == "#!/bin/sh\njob 1\n{literal}\n"
    with pytest.raises(TemplateError, match=r"\{nope\}"):
        TextTemplate.parse("{nope}", {"name"})
