"""EDGI report ingest over HTTP from a real loopback server with real directory listings."""

from __future__ import annotations

import socket
from pathlib import Path

import polars as pl
import pytest

from gridbench.errors import IngestError
from gridbench.jobflow.events.edgi.collector import ReportCollector, ingest_edgi
from gridbench.jobflow.events.edgi.fetch import FetchLimits, child_links
from test_ingest_helpers import (
    _Handler,
    client_events,
    record,
    redirect_to,
    report_xml,
    serve,
    stream_bytes,
    two_tier_records,
    write_report,
)

CLIENT3 = [("j0", "ce-0"), ("j1", "ce-1"), ("j2", "ce-2")]


def test_two_tiers_over_http(tmp_path: Path) -> None:
    ce, br = two_tier_records(3)
    write_report(tmp_path / "ce" / "report-001.xml", ce[:4])
    write_report(tmp_path / "ce" / "report-002.xml", ce[4:])
    write_report(tmp_path / "bridge" / "report 001.xml", br)  # a space: quoted in the listing
    with serve(tmp_path) as base:
        res = ingest_edgi(client_events(CLIENT3), [f"{base}/ce/", f"{base}/bridge"])
    assert res.events.height == 21
    assert res.stats["files_read"] == 3
    assert res.stats["unjoined"] == {}
    assert set(res.events["job"]) == {"j0", "j1", "j2"}


def test_tier_root_listing_with_subdirectories(tmp_path: Path) -> None:
    ce, br = two_tier_records(2)
    write_report(tmp_path / "reports" / "ce" / "a.xml", ce)
    write_report(tmp_path / "reports" / "bridge" / "a.xml", br)
    with serve(tmp_path) as base:
        res = ingest_edgi(client_events(CLIENT3[:2]), [f"{base}/reports/"])
    assert res.stats["tiers"] == ["ce", "bridge"]
    assert res.events.height == 14
    assert set(res.events.filter(pl.col("source") == "bridge")["job"]) == {"j0", "j1"}


async def test_async_incremental_polling_over_http(tmp_path: Path) -> None:
    ce, br = two_tier_records(3)
    write_report(tmp_path / "ce" / "r1.xml", ce[:3])
    write_report(tmp_path / "br" / "r1.xml", br[:4])
    with serve(tmp_path) as base:
        col = ReportCollector([f"ce={base}/ce/", f"bridge={base}/br/"])
        r1 = await col.apoll(client_events(CLIENT3))
        assert r1.events.height == 7
        r2 = await col.apoll()
        assert r2.events.height == 0
        assert r2.stats["files_unchanged"] == 2
        write_report(tmp_path / "ce" / "r2.xml", ce[3:])
        write_report(tmp_path / "br" / "r2.xml", br[4:])
        r3 = await col.apoll(final=True)
    assert r3.events.height == 14
    assert set(r3.events["job"]) == {"j1", "j2"}
    assert r3.stats["files_read"] == 2


def test_growing_file_over_http(tmp_path: Path) -> None:
    ce, _ = two_tier_records(2)
    full = report_xml(ce)
    path = tmp_path / "ce" / "current.xml"
    path.parent.mkdir()
    path.write_text(full[: full.index("ce-1") + 2])  # torn inside the 4th record
    with serve(tmp_path) as base:
        col = ReportCollector([f"{base}/ce/"])
        r1 = col.poll(client_events(CLIENT3[:2]))
        assert r1.events.height == 3
        assert any("current.xml" in w and "ends early" in w for w in r1.warnings)
        path.write_text(full)
        r2 = col.poll()
    assert r2.events.height == 3
    assert set(r2.events["job"]) == {"j1"}
    assert r2.warnings == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_url_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{_free_port()}/reports/"
    with pytest.raises(IngestError) as err:
        ingest_edgi(client_events(CLIENT3), [url], limits=FetchLimits(timeout_s=2))
    e = err.value
    assert e.where == url
    assert "cannot reach" in e.message and "retried once" in e.message
    assert e.fix and "URL" in e.fix
    assert url in str(e)


def test_missing_listing_is_a_clear_error(tmp_path: Path) -> None:
    with serve(tmp_path) as base, pytest.raises(IngestError) as err:
        ingest_edgi(client_events(CLIENT3), [f"{base}/nothing-here/"])
    assert "HTTP 404" in err.value.message


def test_links_outside_the_source_are_not_followed(tmp_path: Path) -> None:
    ce, _ = two_tier_records(2)
    write_report(tmp_path / "reports" / "good.xml", ce[:3])
    write_report(tmp_path / "secret.xml", ce[3:])  # reachable only via ../
    write_report(tmp_path / "reports" / "sub" / "deep.xml", ce[3:])  # nested under a file tier
    (tmp_path / "reports" / "index.html").write_text(
        '<html><body><a href="?C=N;O=D">Name</a> <a href="/">Parent Directory</a>\n'
        '<a href="good.xml">good.xml</a>\n'
        '<a href="../secret.xml">up</a> <a href="%2e%2e/secret.xml">enc</a>\n'
        '<a href="sub/../../secret.xml">sneaky</a> <a href="/secret.xml">abs</a>\n'
        '<a href="http://evil.example/x.xml">evil</a> <a href="//evil.example/y.xml">evil2</a>\n'
        '<a href="..%2Fsecret.xml">encslash</a> <a href="sub/deep.xml">deep</a>\n'
        "</body></html>"
    )
    with serve(tmp_path) as base:
        res = ingest_edgi(client_events(CLIENT3[:2]), [f"ce={base}/reports/"])
    assert set(res.events["job"]) == {"j0"}
    assert res.stats["files_seen"] == 1
    assert any("ignored" in w and "outside this directory" in w for w in res.warnings)


def test_child_links_filter() -> None:
    base = "http://h:8/r/"
    lst = child_links(
        base,
        ["a.xml", "b.XML", "c.txt", "d/", "../e.xml", "http://other/f.xml", "https://h:8/r/g.xml",
         "http://h:8/r/h.xml", "%2e%2e/", "x/y.xml", "a.xml#frag", "?C=M", "/r/", "/"],
    )  # fmt: skip
    assert lst.files == ["http://h:8/r/a.xml", "http://h:8/r/b.XML", "http://h:8/r/h.xml"]
    assert lst.dirs == [("d", "http://h:8/r/d/")]
    assert lst.warnings and "ignored 4 link(s)" in lst.warnings[0]


def test_listing_link_limit(tmp_path: Path) -> None:
    d = tmp_path / "ce"
    for i in range(5):
        write_report(d / f"r{i}.xml", [record("job_entry", f"ce-{i}", f"2024-06-10 12:00:0{i}")])
    with serve(tmp_path) as base:
        res = ingest_edgi(
            client_events([(f"j{i}", f"ce-{i}") for i in range(5)]),
            [f"{base}/ce/"],
            limits=FetchLimits(max_links=3),
        )
    assert res.stats["files_seen"] <= 3
    assert any("more than 3 links" in w for w in res.warnings)


def test_oversize_download_is_abandoned_early(tmp_path: Path) -> None:
    ce, _ = two_tier_records(1)
    write_report(tmp_path / "ce" / "good.xml", ce)
    (tmp_path / "ce" / "huge-declared.xml").write_text("placeholder")
    (tmp_path / "ce" / "huge-chunked.xml").write_text("placeholder")
    total = 200 * 1024 * 1024
    special = {
        "/ce/huge-declared.xml": stream_bytes(total, declare_length=True, key="declared"),
        "/ce/huge-chunked.xml": stream_bytes(total, declare_length=False, key="chunked"),
    }
    _Handler.sent.clear()
    with serve(tmp_path, special) as base:
        res = ingest_edgi(
            client_events(CLIENT3[:1]),
            [f"{base}/ce/"],
            limits=FetchLimits(max_file_bytes=256 * 1024),
        )
    assert res.events.height == 3
    over = [w for w in res.warnings if "limit" in w]
    assert len(over) == 2
    assert any("huge-declared.xml" in w and str(total) in w for w in over)
    # the client stopped reading long before the server could send it all
    assert _Handler.sent.get("declared", 0) < total // 4
    assert _Handler.sent.get("chunked", 0) < total // 4


def test_redirect_to_another_host_is_not_followed(tmp_path: Path) -> None:
    ce, _ = two_tier_records(1)
    write_report(tmp_path / "ce" / "good.xml", ce)
    (tmp_path / "ce" / "moved.xml").write_text("placeholder")
    (tmp_path / "moved").mkdir()
    special = {
        "/ce/moved.xml": redirect_to("http://evil.example/moved.xml"),
        "/moved/": redirect_to("http://evil.example/reports/"),
    }
    with serve(tmp_path, special) as base:
        res = ingest_edgi(client_events(CLIENT3[:1]), [f"{base}/ce/"])
        assert res.events.height == 3
        assert any("moved.xml" in w and "outside the report URL" in w for w in res.warnings)
        with pytest.raises(IngestError) as err:
            ingest_edgi(client_events(CLIENT3[:1]), [f"{base}/moved/"])
    assert "evil.example" in err.value.message


def test_hostile_file_over_http_does_not_stop_the_rest(tmp_path: Path) -> None:
    ce, _ = two_tier_records(1)
    write_report(tmp_path / "ce" / "good.xml", ce)
    (tmp_path / "ce" / "lol.xml").write_text(
        '<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<report>&b;</report>"
    )
    with serve(tmp_path) as base:
        res = ingest_edgi(client_events(CLIENT3[:1]), [f"{base}/ce/"])
    assert res.events.height == 3
    assert [w for w in res.warnings if "lol.xml" in w and "rejected" in w]
