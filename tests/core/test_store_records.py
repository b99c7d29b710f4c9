"""Record files: a torn last line (a writer killed mid-line) is left out when read and cut
before the next append; damage anywhere else is an error naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridbench.errors import ResultsError
from gridbench.store.records import append_record, drop_torn_tail, read_records


def test_a_torn_last_line_is_left_out_then_cut_by_the_next_append(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    append_record(p, {"n": 1})
    with p.open("a", encoding="utf-8") as fh:
        fh.write('{"n": 2, "tex')  # killed mid-write: never acknowledged
    assert read_records(p) == [{"n": 1}]
    append_record(p, {"n": 3})
    assert p.read_text(encoding="utf-8") == '{"n": 1}\n{"n": 3}\n'
    assert read_records(p) == [{"n": 1}, {"n": 3}]


def test_a_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text('{"n": 1}\n{"n": 2}', encoding="utf-8")
    assert read_records(p) == [{"n": 1}, {"n": 2}]


def test_damage_before_the_last_line_is_an_error_with_its_line(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text('{"n": 1}\n{"n": \n{"n": 3}\n', encoding="utf-8")
    with pytest.raises(ResultsError) as err:
        read_records(p)
    assert err.value.where.endswith("r.jsonl:2")


def test_drop_torn_tail_keeps_whole_lines(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    drop_torn_tail(p)  # no file: nothing to do
    p.write_text('{"n": 1}\n{"n"', encoding="utf-8")
    drop_torn_tail(p)
    assert p.read_text(encoding="utf-8") == '{"n": 1}\n'
    p.write_text('{"n"', encoding="utf-8")
    drop_torn_tail(p)
    assert p.read_text(encoding="utf-8") == ""


def test_append_refuses_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("", encoding="utf-8")
    (tmp_path / "r.jsonl").symlink_to(target)
    with pytest.raises(ResultsError):
        append_record(tmp_path / "r.jsonl", {"n": 1})
    assert target.read_text(encoding="utf-8") == ""


def test_a_whole_last_record_without_its_newline_is_kept_by_the_next_append(
    tmp_path: Path,
) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text('{"n": 1}\n{"n": 2}', encoding="utf-8")  # a hand edit dropped the newline
    append_record(p, {"n": 3})
    assert read_records(p) == [{"n": 1}, {"n": 2}, {"n": 3}]
