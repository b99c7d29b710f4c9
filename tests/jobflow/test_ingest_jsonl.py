"""JSON-lines event import and export."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from gridbench.errors import IngestError
from gridbench.jobflow.events.jsonl import read_jsonl, rfc3339_to_ns, write_jsonl
from gridbench.jobflow.events.log import EventLog, Origin, read_events
from gridbench.jobflow.events.model import EVENT_SCHEMA

T = 1_718_000_000_000_000_000  # 2024-06-10T06:13:20Z


def _write(path: Path, lines: list[str], *, final_newline: bool = True) -> Path:
    path.write_text("\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8")
    return path


def test_good_lines_all_time_forms(tmp_path: Path) -> None:
    p = _write(
        tmp_path / "e.jsonl",
        [
            json.dumps({"job": "a", "stage": "submit", "t": T + 7, "source": "client"}),
            json.dumps({"job": "a", "stage": "ce_entry", "t_s": 1718000001.25, "source": "ce",
                        "precision_ns": 1_000_000, "agent": "ce-host", "clock_offset_ns": -5,
                        "attrs": {"k": [1, 2], "s": "é"}}),
            "",
            json.dumps({"job": 42, "stage": "ce_done", "time": "2024-06-10T08:13:22.5+02:00",
                        "source": "ce"}),
            json.dumps({"job": "b", "stage": "x", "time": "2024-06-10T06:13:20Z", "source": "ce"}),
        ],
    )  # fmt: skip
    res = read_jsonl(p)
    ev = res.events
    assert res.warnings == []
    assert ev.schema == EVENT_SCHEMA
    assert ev["job"].to_list() == ["a", "a", "42", "b"]
    assert ev["t_ns"].to_list() == [T + 7, T + 1_250_000_000, T + 2_500_000_000, T]
    # default 1 µs; given 1 ms; RFC 3339 defaults to its fraction's resolution
    assert ev["precision_ns"].to_list() == [1000, 1_000_000, 100_000_000, 1_000_000_000]
    assert ev["agent"].to_list() == ["local", "ce-host", "local", "local"]
    assert ev["clock_offset_ns"].to_list() == [0, -5, 0, 0]
    assert json.loads(ev["attrs"][1]) == {"k": [1, 2], "s": "é"}
    assert ev["attrs"][0] is None


def test_bad_lines_are_skipped_with_line_numbers(tmp_path: Path) -> None:
    good = json.dumps({"job": "a", "stage": "submit", "t": T, "source": "client"})
    p = _write(
        tmp_path / "e.jsonl",
        [
            good,
            "{not json",
            json.dumps({"job": "a", "stage": "s", "source": "c"}),  # no time
            json.dumps({"job": "a", "stage": "s", "source": "c", "t": 1, "t_s": 1.0}),  # two
            json.dumps({"job": "a", "stage": "s", "source": "c", "t": "123"}),
            json.dumps({"stage": "s", "source": "c", "t": 1}),
            json.dumps({"job": "a", "stage": "s", "source": "c", "time": "2024-06-10 06:13"}),
            json.dumps([1, 2]),
            json.dumps({"job": "a", "stage": "s", "source": "c", "t": 1, "attrs": [1]}),
            json.dumps({"job": "a", "stage": "s", "source": "c", "t": 1, "precision_ns": 0}),
            json.dumps({"job": "a", "stage": "s", "source": "c", "t": 2**70}),
            good,
            '{"job": "torn", "stage": "s", "sou',
        ],
        final_newline=False,
    )
    res = read_jsonl(p)
    assert res.events.height == 2
    assert res.stats["bad_lines"] == 11
    got = {int(w.split(":")[1]): w for w in res.warnings}
    assert "not valid JSON" in got[2]
    assert "exactly one of" in got[3] and "exactly one of" in got[4]
    assert "'t' must be an integer" in got[5]
    assert "missing 'job'" in got[6]
    assert "RFC 3339" in got[7]
    assert "not a JSON object" in got[8]
    assert "'attrs' must be a JSON object" in got[9]
    assert "'precision_ns' must be positive" in got[10]
    assert "out of range" in got[11]
    assert "torn last line" in got[13]
    assert all(w.startswith(f"{p}:") for w in res.warnings)


def test_not_jsonl_at_all_is_refused(tmp_path: Path) -> None:
    with EventLog(tmp_path / "events.csv") as log:
        log.append("a", "submit", T)
    with pytest.raises(IngestError) as err:
        read_jsonl(tmp_path / "events.csv")
    assert err.value.where == f"{tmp_path / 'events.csv'}:1"
    assert "docs/formats.md" in (err.value.fix or "")


@pytest.mark.parametrize("filler", ["[1]", "42", '"text"', "not json"])
def test_fifty_lines_without_an_object_refuse_the_file(tmp_path: Path, filler: str) -> None:
    """Valid JSON that is no object counts towards the first 50 lines as invalid JSON does
    (60 array lines then one event was once read as a file of 60 bad lines)."""
    event = json.dumps({"job": "a", "stage": "s", "t": T, "source": "c"})
    p = _write(tmp_path / "e.jsonl", [filler] * 60 + [event])
    with pytest.raises(IngestError) as err:
        read_jsonl(p)
    assert "none of its the first 50 non-blank lines" not in err.value.message
    assert "none of the first 50 non-blank lines is a JSON object" in err.value.message
    assert err.value.where == f"{p}:1"
    # 49 such lines, then the event: still JSON lines, the bad ones named
    p = _write(tmp_path / "f.jsonl", [filler] * 49 + [event])
    res = read_jsonl(p)
    assert res.events["job"].to_list() == ["a"] and res.stats["bad_lines"] == 49


def test_size_limits(tmp_path: Path) -> None:
    line = json.dumps({"job": "a", "stage": "s", "t": T, "source": "c"})
    long_attr = json.dumps(
        {"job": "b", "stage": "s", "t": T, "source": "c", "attrs": {"x": "y" * 5000}}
    )
    p = _write(tmp_path / "e.jsonl", [line, long_attr, line])
    res = read_jsonl(p, max_line_bytes=1000)
    assert res.events["job"].to_list() == ["a", "a"]
    assert any(w.startswith(f"{p}:2:") and "longer than 1000 bytes" in w for w in res.warnings)
    with pytest.raises(IngestError) as err:
        read_jsonl(p, max_bytes=100)
    assert "over the 100-byte limit" in err.value.message


def test_export_round_trip(tmp_path: Path) -> None:
    with EventLog(tmp_path / "events.csv") as log:
        log.append("a", "submit", T, attrs={"backend_id": 'x,"y"'})
        log.append("a", "ce_entry", T + 5, Origin("ce", 10**9, "ce1", -3))
        log.append("b", "failed", T + 9, attrs={"kind": "dropped"})
    ev = read_events(tmp_path / "events.csv")
    n = write_jsonl(ev, tmp_path / "out.jsonl")
    assert n == 3
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {
        "job": "a", "stage": "submit", "t": T, "source": "client", "precision_ns": 1000,
        "agent": "local", "clock_offset_ns": 0, "attrs": {"backend_id": 'x,"y"'},
    }  # fmt: skip
    back = read_jsonl(tmp_path / "out.jsonl")
    assert back.warnings == []
    assert back.events.equals(ev)


def test_export_keeps_non_object_attrs_valid(tmp_path: Path) -> None:
    ev = pl.DataFrame(
        [("a", "s", T, "c", 1000, "local", 0, "not-json")], schema=EVENT_SCHEMA, orient="row"
    )
    write_jsonl(ev, tmp_path / "o.jsonl")
    obj = json.loads((tmp_path / "o.jsonl").read_text())
    assert obj["attrs"] == {"raw": "not-json"}


def test_rfc3339() -> None:
    assert rfc3339_to_ns("2024-06-10T06:13:20Z") == (T, 1_000_000_000)
    assert rfc3339_to_ns("2024-06-10T06:13:20.000000001z") == (T + 1, 1)
    assert rfc3339_to_ns("2024-06-10T01:13:20-05:00")[0] == T
    with pytest.raises(ValueError):
        rfc3339_to_ns("2024-06-10T06:13:20")  # no zone: ambiguous
