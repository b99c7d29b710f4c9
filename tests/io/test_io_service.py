"""An HTTP/REST service's operations against payload size, concurrent clients and
connection reuse (issue 40; the seeds' service tables), against nginx's WebDAV module on
loopback (the nginx_dav fixture): every request timed and checked, throughput against
sessions, and the server's own log showing a kept connection per client against one per
request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import SpecError
from gridbench.io.family import FAMILY
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.report import build_report
from gridbench.io.runner import IoRunner
from gridbench.store.records import read_records
from io_fixtures import DavServer, nginx_dav  # noqa: F401 (fixture)

REQ = 4


def _run(tmp_path: Path, section: str) -> tuple[dict[str, Any], Path]:
    d = tmp_path / "d"
    d.mkdir(parents=True, exist_ok=True)
    text = (
        f"name: svc\ntargets: [{{name: d, path: {d}}}]\niozone: {{enabled: false}}\n"
        f"service: {section}\n"
    )
    spec, data = load_io_spec_text(text, "io.yaml")
    run = IoRunner(spec, data, tmp_path / "results", force=True).execute()
    return analyze_and_write(run), run.path


def _closed(server: DavServer) -> int:
    """Connections nginx saw closed (its info log: one line per connection)."""
    return server.log.read_text().count("closed keepalive connection")


def _one_mode(tmp_path: Path, server: DavServer, reuse: str) -> tuple[dict[str, Any], Path, int]:
    before = _closed(server)
    section = f"{{url: '{server.url}', sizes: [1k, 256k], clients: [1, 3], requests: {REQ}, "
    m, run = _run(tmp_path / reuse, section + f"reuse: [{reuse}]}}")
    return m, run, _closed(server) - before


def test_latency_against_size_clients_and_reuse(tmp_path: Path, nginx_dav: DavServer) -> None:  # noqa: F811
    m, run, kept = _one_mode(tmp_path, nginx_dav, "true")
    m2, run2, new = _one_mode(tmp_path, nginx_dav, "false")
    # the server saw one connection per client and round kept, one per request otherwise
    rounds = 2 * (1 + 3)  # sizes x client counts, a connection per client
    assert kept == rounds, kept
    assert new == 2 * (1 + 3) * REQ * 3, new  # every put, get and delete on its own
    for metrics, r, reuse in ((m, run, True), (m2, run2, False)):
        assert metrics["service_ok"] is True and FAMILY.exit_code(metrics) == 0
        ops = {(o["op"], o["size"], o["clients"]): o for o in metrics["service"]["ops"]}
        assert set(ops) == {
            (op, s, n) for op in ("put", "get", "delete") for s in (1024, 262144) for n in (1, 3)
        }
        for (_op, _s, n), o in ops.items():
            assert o["reuse"] is reuse and o["requests"] == n * REQ and o["failed"] == 0
            assert o["latency_ms"]["n"] == n * REQ and o["latency_ms"]["mean"] > 0
        # the latency is the records' own, and a bigger payload takes longer to send
        recs = [x for x in read_records(r / "service.jsonl") if x["op"] == "put"]
        mine = [x["seconds"] * 1000 for x in recs if (x["size"], x["clients"]) == (262144, 3)]
        assert ops[("put", 262144, 3)]["latency_ms"]["mean"] == pytest.approx(sum(mine) / len(mine))
        rnd = {(x["size"], x["clients"]): x for x in metrics["service"]["rounds"]}
        assert set(rnd) == {(s, n) for s in (1024, 262144) for n in (1, 3)}
        for (s, n), x in rnd.items():
            assert x["requests"] == n * REQ * 3 and x["failed"] == 0
            assert x["requests_per_s"] == pytest.approx(x["requests"] / x["seconds"])
            assert x["mib_s"] == pytest.approx(2 * n * REQ * s / 2**20 / x["seconds"])
        assert list(nginx_dav.root.iterdir()) == []  # every object deleted
        ids = {s.id for s in build_report(metrics).sections}
        assert {"service-ops", "service-throughput", "service-latency-size"} <= ids
    texts = [f.text for f in build_report(m).headline.findings]
    assert any(t.startswith("Service: at most") for t in texts), texts


def test_both_modes_in_one_run_say_what_reuse_saves(tmp_path: Path, nginx_dav: DavServer) -> None:  # noqa: F811
    m, _ = _run(tmp_path, f"{{url: '{nginx_dav.url}', sizes: [1k], clients: [2], requests: 3}}")
    modes = {(o["op"], o["reuse"]) for o in m["service"]["ops"]}
    assert modes == {(op, r) for op in ("put", "get", "delete") for r in (True, False)}
    texts = [f.text for f in build_report(m).headline.findings]
    assert any("a new connection per request makes" in t for t in texts), texts


def test_a_missing_object_fails_the_run(tmp_path: Path, nginx_dav: DavServer) -> None:  # noqa: F811
    # GET of an object never stored: 404, each request recorded failed, the run fails
    m, _ = _run(
        tmp_path,
        f"{{url: '{nginx_dav.url}', sizes: [1k], clients: [1], requests: 2, "
        "ops: [put, get, delete], reuse: [true]}",
    )
    assert m["service_ok"] is True
    bad = nginx_dav.url.replace("/dav/", "/nowhere/")
    m, _ = _run(tmp_path / "b", f"{{url: '{bad}', sizes: [1k], clients: [1], requests: 2}}")
    assert m["service_ok"] is False and FAMILY.exit_code(m) == 1
    put = next(o for o in m["service"]["ops"] if o["op"] == "put")
    assert put["failed"] == put["requests"] == 2 and put["failures"]
    texts = [f.text for f in build_report(m).headline.findings]
    assert "Service: requests FAILED" in texts


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ("{url: 'http://h/dav/', clients: [0]}", "service.clients.0"),
        ("{url: 'http://u:p@h/dav/'}", "must not contain credentials"),
        ("{url: 'http://h/dav/', ops: [get]}", "add put"),
        ("{url: 'http://h/dav/', sizes: [1k, 1k]}", "service.sizes lists a value twice"),
        ("{url: 'http://h/dav/', reuse: []}", "service.reuse"),
        ("{url: 'ftp://h/'}", "service.url"),
        ("{url: 'http://h/dav/', ops: [post]}", "service.ops.0"),
    ],
)
def test_service_spec_errors(section: str, said: str) -> None:
    with pytest.raises(SpecError, match=said.replace(".", r"\.")) as ei:
        load_io_spec_text(f"name: h\ntargets: [{{name: d, path: /x}}]\nservice: {section}\n", "s")
    assert len(str(ei.value).strip().splitlines()) <= 3
