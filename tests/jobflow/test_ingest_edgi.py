"""EDGI report ingest from local directories: parsing, precision, join, increments, hostile
input."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from gridbench.errors import IngestError
from gridbench.jobflow.events.edgi.collector import ReportCollector, ingest_edgi
from gridbench.jobflow.events.edgi.fetch import FetchLimits
from gridbench.jobflow.events.edgi.report_xml import parse_report
from gridbench.jobflow.events.model import EVENT_SCHEMA
from gridbench.jobflow.events.tiers import parse_report_sources
from test_ingest_helpers import (
    T0_NS,
    client_events,
    record,
    record_line,
    report_xml,
    two_tier_records,
    write_report,
)

S = 1_000_000_000
MS = 1_000_000


def _stage(df: pl.DataFrame, job: str, stage: str) -> pl.DataFrame:
    return df.filter((pl.col("job") == job) & (pl.col("stage") == stage))


def test_seconds_and_milliseconds_precision(tmp_path: Path) -> None:
    write_report(
        tmp_path / "ce" / "r1.xml",
        [
            record("job_entry", "ce-0", "2024-06-10 12:00:01"),
            record("job_submission", "ce-0", "2024-06-10 12:00:02.345", next_id="br-0"),
            record("job_status", "ce-0", "2024-06-10 12:00:03.5", status="Running"),
            record("job_status", "ce-0", "2024-06-10 12:05:00.000", status="FINISHED"),
        ],
    )
    res = ingest_edgi(client_events([("j0", "ce-0")]), [str(tmp_path / "ce")])
    ev = res.events
    assert ev.schema == EVENT_SCHEMA
    assert ev["stage"].to_list() == ["ce_entry", "ce_submit", "ce_status", "ce_done"]
    assert ev["job"].unique().to_list() == ["j0"]
    assert ev["t_ns"].to_list() == [
        T0_NS + 1 * S,
        T0_NS + 2 * S + 345 * MS,
        T0_NS + 3 * S + 500 * MS,
        T0_NS + 300 * S,
    ]
    assert ev["precision_ns"].to_list() == [S, MS, 100 * MS, MS]
    assert set(ev["source"]) == {"ce"}
    submit = json.loads(ev["attrs"][1])
    assert submit == {"id": "ce-0", "next_id": "br-0"}
    assert json.loads(ev["attrs"][3]) == {"id": "ce-0", "status": "FINISHED"}
    assert res.warnings == []


def test_two_tier_join_through_id_chain(tmp_path: Path) -> None:
    ce, br = two_tier_records(3)
    write_report(tmp_path / "ce" / "a.xml", ce)
    write_report(tmp_path / "br" / "a.xml", br)
    client = client_events([("j0", "ce-0"), ("j1", "ce-1"), ("j2", "ce-2")])
    res = ingest_edgi(client, [str(tmp_path / "ce"), str(tmp_path / "br")])
    ev = res.events
    # 7 chain/status records per job: ce entry/submit/done, bridge entry/status/submit/done
    assert ev.height == 21
    for i in range(3):
        job = f"j{i}"
        stages = set(ev.filter(pl.col("job") == job)["stage"])
        assert stages == {
            "ce_entry", "ce_submit", "ce_done",
            "bridge_entry", "bridge_status", "bridge_submit", "bridge_done",
        }  # fmt: skip
        t = _stage(ev, job, "bridge_done")["t_ns"].item()
        assert t == T0_NS + 60 * S + i * S
        assert _stage(ev, job, "bridge_entry")["source"].item() == "bridge"
    assert res.stats["tiers"] == ["ce", "bridge"]
    assert res.stats["unjoined"] == {}


def test_three_tiers_and_explicit_names(tmp_path: Path) -> None:
    write_report(
        tmp_path / "a" / "r.xml",
        [record("job_submission", "A1", "2024-06-10 12:00:01", next_id="B1")],
    )
    write_report(
        tmp_path / "b" / "r.xml",
        [record("job_submission", "B1", "2024-06-10 12:00:02", next_id="C1")],
    )
    write_report(tmp_path / "c" / "r.xml", [record("job_entry", "C1", "2024-06-10 12:00:03")])
    sources = [f"front={tmp_path / 'a'}", f"mid={tmp_path / 'b'}", f"back={tmp_path / 'c'}"]
    res = ingest_edgi(client_events([("j", "A1")]), sources)
    assert res.events["stage"].to_list() == ["front_submit", "mid_submit", "back_entry"]
    assert res.events["job"].to_list() == ["j", "j", "j"]
    # bare sources get ce, bridge, tier2 by position
    assert [s.tier for s in parse_report_sources(["x1", "x2", "x3"])] == ["ce", "bridge", "tier2"]


def test_unjoined_are_counted_not_silently_dropped(tmp_path: Path) -> None:
    ce, br = two_tier_records(2)
    ce.append(record("job_entry", "someone-else", "2024-06-10 12:00:09"))
    br.append(record("job_entry", "orphan-br", "2024-06-10 12:00:09"))
    write_report(tmp_path / "ce" / "a.xml", ce)
    write_report(tmp_path / "br" / "a.xml", br)
    res = ingest_edgi(
        client_events([("j0", "ce-0"), ("j1", "ce-1")]),
        [str(tmp_path / "ce"), str(tmp_path / "br")],
    )
    assert res.stats["unjoined"] == {"ce": 1, "bridge": 1}
    assert res.unjoined is not None
    assert sorted(res.unjoined["id"].to_list()) == ["orphan-br", "someone-else"]
    assert any(
        "1 ce record(s) could not be joined" in w and "someone-else" in w for w in res.warnings
    )
    assert any("1 bridge record(s)" in w and "orphan-br" in w for w in res.warnings)
    assert res.events.height == 14


def test_incremental_poll_returns_only_new_events(tmp_path: Path) -> None:
    ce, br = two_tier_records(4)
    d_ce, d_br = tmp_path / "ce", tmp_path / "br"
    d_br.mkdir()
    # first: CE reports of jobs 0-1; the bridge has written nothing yet
    write_report(d_ce / "r1.xml", ce[:6])
    col = ReportCollector([str(d_ce), str(d_br)])
    r1 = col.poll(client_events([("j0", "ce-0"), ("j1", "ce-1")]))
    assert r1.events.height == 6
    assert set(r1.events["stage"]) == {"ce_entry", "ce_submit", "ce_done"}
    # nothing new: nothing returned
    assert col.poll().events.height == 0
    # the bridge reports appear: joined through the CE submissions seen earlier
    write_report(d_br / "r1.xml", br[:8])
    r2 = col.poll()
    assert r2.events.height == 8
    assert set(r2.events["stage"]) == {
        "bridge_entry",
        "bridge_status",
        "bridge_submit",
        "bridge_done",
    }
    # new file, new client jobs; bridge records that arrive before their CE submission wait
    write_report(d_br / "r2.xml", br[8:])
    r3 = col.poll(client_events([("j2", "ce-2"), ("j3", "ce-3")], t0_ns=T0_NS + 2 * S))
    assert r3.events.height == 0
    assert r3.stats["pending"] == {"bridge": 8}
    write_report(d_ce / "r2.xml", ce[6:])
    r4 = col.poll(final=True)
    assert r4.events.height == 6 + 8
    assert set(r4.events["job"]) == {"j2", "j3"}
    assert r4.stats["unjoined"] == {}
    total = pl.concat([r1.events, r2.events, r3.events, r4.events])
    assert total.height == 28
    assert total.unique().height == 28  # no duplicates


def test_truncated_file_warns_then_completes(tmp_path: Path) -> None:
    ce, _ = two_tier_records(3)
    full = report_xml(ce)
    # cut inside the 5th of 9 records (ce-1's submission)
    cut = full.index("<metric_data>", full.index("ce-1")) + 5
    path = tmp_path / "ce" / "current.xml"
    path.parent.mkdir()
    path.write_text(full[:cut], encoding="utf-8")
    col = ReportCollector([str(tmp_path / "ce")])
    client = client_events([("j0", "ce-0"), ("j1", "ce-1"), ("j2", "ce-2")])
    r1 = col.poll(client)
    assert r1.events.height == 4  # the complete records before the tear
    assert len(r1.warnings) == 1
    assert str(path) in r1.warnings[0] and "ends early" in r1.warnings[0]
    # unchanged: no new warning, no events
    r2 = col.poll()
    assert r2.events.height == 0 and r2.warnings == []
    path.write_text(full, encoding="utf-8")
    r3 = col.poll(final=True)
    assert r3.warnings == []
    assert r3.events.height == 5
    both = pl.concat([r1.events, r3.events])
    assert both.select("job", "stage").unique().height == 9


def test_truncated_at_the_end_is_reported(tmp_path: Path) -> None:
    ce, _ = two_tier_records(1)
    full = report_xml(ce)
    write_path = tmp_path / "r.xml"
    write_path.write_text(full[: full.rindex("</report>")], encoding="utf-8")
    res = ingest_edgi(client_events([("j0", "ce-0")]), [str(tmp_path)])
    assert res.events.height == 3
    assert any("still incomplete at the end" in w for w in res.warnings)


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<report><metric_data><dt>2024-06-10 12:00:00</dt><event>job_entry</event>
<job_id>&lol9;</job_id></metric_data></report>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE report [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<report><metric_data><dt>2024-06-10 12:00:00</dt><event>job_entry</event>
<job_id>&xxe;</job_id></metric_data></report>
"""

EXTERNAL_DTD = """<?xml version="1.0"?>
<!DOCTYPE report SYSTEM "http://127.0.0.1:1/evil.dtd">
<report/>
"""


@pytest.mark.parametrize(
    ("text", "what"),
    [(BILLION_LAUGHS, "DTD"), (EXTERNAL_ENTITY, "DTD"), (EXTERNAL_DTD, "DTD")],
)
def test_hostile_xml_is_rejected_and_others_still_ingested(
    tmp_path: Path, text: str, what: str
) -> None:
    ce, _ = two_tier_records(1)
    write_report(tmp_path / "good.xml", ce)
    (tmp_path / "evil.xml").write_text(text, encoding="utf-8")
    col = ReportCollector([str(tmp_path)])
    res = col.poll(client_events([("j0", "ce-0")]))
    assert res.events.height == 3
    evil = [w for w in res.warnings if "evil.xml" in w]
    assert len(evil) == 1
    assert "rejected" in evil[0] and what in evil[0]
    assert res.stats["files_skipped"] == 1
    # remembered: not re-read or re-warned while unchanged
    again = col.poll()
    assert again.warnings == [] and again.events.height == 0


def test_entities_are_refused_even_without_doctype_trick() -> None:
    # the parser itself, directly: an entity declaration must never be expanded
    parsed = parse_report(EXTERNAL_ENTITY.encode())
    assert parsed.status == "rejected"
    assert parsed.records.height == 0
    parsed = parse_report(
        b"<report><metric_data><job_id>&undefined;</job_id></metric_data></report>"
    )
    assert parsed.status == "malformed"


def test_oversize_file_is_skipped_before_parsing(tmp_path: Path) -> None:
    ce, _ = two_tier_records(1)
    write_report(tmp_path / "good.xml", ce)
    big = tmp_path / "big.xml"
    with open(big, "wb") as fh:  # sparse: 64 MiB that were never written
        fh.truncate(64 * 1024 * 1024)
    col = ReportCollector([str(tmp_path)], limits=FetchLimits(max_file_bytes=1024 * 1024))
    res = col.poll(client_events([("j0", "ce-0")]))
    assert res.events.height == 3
    warn = [w for w in res.warnings if "big.xml" in w]
    assert len(warn) == 1 and "67108864 bytes" in warn[0] and "limit" in warn[0]
    assert col.poll().warnings == []  # told once


def test_bad_records_warn_with_file_and_line(tmp_path: Path) -> None:
    recs = [
        record("job_entry", "ce-0", "2024-06-10 12:00:01"),
        record("job_entry", None, "2024-06-10 12:00:02", application="no-id-here"),
        record("job_entry", "ce-0", "10/06/2024 12:00", application="bad-dt-here"),
        record("job_teleport", "ce-0", "2024-06-10 12:00:04"),
        record("job_status", "ce-0", "2024-06-10 12:00:05", application="no-status-here"),
        record("job_status", "ce-0", "2024-06-10 12:00:06", status="Done"),
    ]
    path = write_report(tmp_path / "r.xml", recs)
    text = path.read_text()
    res = ingest_edgi(client_events([("j0", "ce-0")]), [str(tmp_path)])
    assert res.events["stage"].to_list() == ["ce_entry", "ce_done"]
    assert res.stats["bad_records"] == 4
    by_line = {w.split(": ", 1)[0]: w for w in res.warnings}
    assert "without <job_id>" in by_line[f"{path}:{record_line(text, 'no-id-here')}"]
    assert "bad dt '10/06/2024 12:00'" in by_line[f"{path}:{record_line(text, 'bad-dt-here')}"]
    assert "unknown event 'job_teleport'" in by_line[f"{path}:{record_line(text, 'job_teleport')}"]
    assert "without <status>" in by_line[f"{path}:{record_line(text, 'no-status-here')}"]


def test_malformed_xml_keeps_records_before_the_error(tmp_path: Path) -> None:
    ce, _ = two_tier_records(2)
    text = report_xml(ce)
    broken = text.replace("<job_id>ce-1</job_id>", "<job_id>ce-1</job_idd>", 1)
    (tmp_path / "r.xml").write_text(broken, encoding="utf-8")
    res = ingest_edgi(client_events([("j0", "ce-0"), ("j1", "ce-1")]), [str(tmp_path)])
    assert set(res.events["job"]) == {"j0"}
    bad_line = next(i for i, ln in enumerate(broken.splitlines(), 1) if "job_idd" in ln)
    assert any(f"r.xml:{bad_line}: not well-formed XML" in w for w in res.warnings)


def test_timezone_mixup_is_flagged(tmp_path: Path) -> None:
    # the seed's own example: dt two hours after the report's timestamp attribute
    xml = (
        '<report timestamp="1309257007159" timezone="GMT" version="1.1">\n'
        "<metric_data><dt>2011-06-28 12:30:06</dt><event>job_entry</event>"
        "<job_id>x</job_id></metric_data></report>\n"
    )
    (tmp_path / "r.xml").write_text(xml)
    res = ingest_edgi(client_events([("j", "x")]), [str(tmp_path)])
    assert res.events["t_ns"].item() == 1309264206 * S
    assert any("2.0 h after the report's timestamp" in w for w in res.warnings)


def test_report_timezone_attribute_is_applied(tmp_path: Path) -> None:
    write_report(
        tmp_path / "r.xml",
        [record("job_entry", "x", "2024-06-10 14:00:00")],
        timezone="Europe/Belgrade",  # CEST, UTC+2
    )
    res = ingest_edgi(client_events([("j", "x")]), [str(tmp_path)])
    assert res.events["t_ns"].item() == T0_NS


def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as err:
        ingest_edgi(client_events([("j", "x")]), [str(tmp_path / "nope")])
    assert err.value.where == str(tmp_path / "nope")
    assert err.value.fix


def test_not_a_report_and_hidden_files(tmp_path: Path) -> None:
    (tmp_path / "other.xml").write_text("<html><body/></html>")
    (tmp_path / ".partial.xml").write_text("<report")  # writers' temp files are ignored
    (tmp_path / "notes.txt").write_text("hello")
    res = ingest_edgi(client_events([("j", "x")]), [str(tmp_path)])
    assert res.events.height == 0
    assert len(res.warnings) == 1 and "not an EDGI monitoring report" in res.warnings[0]
