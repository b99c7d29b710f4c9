"""N concurrent WebDAV clients against nginx's DAV module on loopback (the nginx_dav
fixture): every client uploads and downloads at once, content checked; an upload over
the server's limit is refused and its time to refusal measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gridbench.errors import SpecError
from gridbench.io.family import FAMILY
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.report import build_report
from gridbench.io.runner import IoRunner
from gridbench.store.records import read_records
from gridbench.web.app import create_app
from gridbench.web.dashboard import WebConfig
from io_fixtures import DavServer, nginx_dav  # noqa: F401 (fixture)


def _run(tmp_path: Path, section: str) -> tuple[dict[str, Any], Path]:
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    text = (
        f"name: h\ntargets: [{{name: d, path: {d}}}]\niozone: {{enabled: false}}\n"
        f"http_clients: {section}\n"
    )
    spec, data = load_io_spec_text(text, "io.yaml")
    run = IoRunner(spec, data, tmp_path / "results", force=True).execute()
    return analyze_and_write(run), run.path


def test_n_clients_upload_and_download_at_once(tmp_path: Path, nginx_dav: DavServer) -> None:  # noqa: F811
    m, run = _run(
        tmp_path, f"{{url: '{nginx_dav.url}', clients: [1, 4], size: 2M, repetitions: 2}}"
    )
    assert m["http_clients_ok"] is True and FAMILY.exit_code(m) == 0
    g = {(x["clients"], x["op"]): x for x in m["http_clients"]}
    assert set(g) == {(n, op) for n in (1, 4) for op in ("upload", "download")}
    for (n, _op), x in g.items():
        assert x["transfers"] == 2 * n and x["refused"] == 0 and x["failed"] == []
        assert sorted(x["per_client_mib_s"]) == [str(i) for i in range(n)]
        assert all(v > 0 for v in x["per_client_mib_s"].values())
        assert x["aggregate_mib_s"]["n"] == 2 and x["aggregate_mib_s"]["mean"] > 0
    # every client of a round uploads, and no download starts before the last upload
    # ended (the barrier between the phases); the aggregate is recomputed from the records
    recs = read_records(run / "http_clients.jsonl")
    for rep in (0, 1):
        mine = [r for r in recs if r["clients"] == 4 and r["rep"] == rep]
        ups = [r for r in mine if r["op"] == "upload"]
        downs = [r for r in mine if r["op"] == "download"]
        assert (
            sorted(r["client"] for r in ups) == sorted(r["client"] for r in downs) == [0, 1, 2, 3]
        )
        assert min(r["t0"] for r in downs) >= max(r["t1"] for r in ups)
    ups4 = [r for r in recs if r["clients"] == 4 and r["op"] == "upload"]
    spans = [
        max(r["t1"] for r in ups4 if r["rep"] == k) - min(r["t0"] for r in ups4 if r["rep"] == k)
        for k in (0, 1)
    ]
    want = sum(4 * 2 / s for s in spans) / 2
    assert g[(4, "upload")]["aggregate_mib_s"]["mean"] == pytest.approx(want)
    assert list(nginx_dav.root.iterdir()) == []  # uploads deleted afterwards
    ids = {s.id for s in build_report(m).sections}
    assert {"http-clients", "http-clients-scaling"} <= ids
    # the dashboard draws the same sections on the run's page, with no page of its own
    web = TestClient(create_app(WebConfig(run.parent)), base_url="http://127.0.0.1")
    page = web.get(f"/experiments/{run.name}").text
    assert 'id="table-http-clients"' in page and "HTTP aggregate rate against clients" in page


def test_refused_upload_has_its_time_to_refusal(tmp_path: Path, nginx_dav: DavServer) -> None:  # noqa: F811
    limited = nginx_dav.url.replace("/dav/", "/limited/")  # nginx: client_max_body_size 1m
    m, _ = _run(tmp_path, f"{{url: '{limited}', clients: [3], size: 4M}}")
    [up] = [x for x in m["http_clients"] if x["op"] == "upload"]
    assert up["refused"] == 3 and up["statuses"] == ["413"]
    assert up["refusal_s"]["n"] == 3 and up["refusal_s"]["mean"] > 0
    assert [x["op"] for x in m["http_clients"]] == ["upload"]  # nothing to download
    # a refusal is a measured answer: the run passes, the headline says it
    assert m["http_clients_ok"] is True and FAMILY.exit_code(m) == 0
    texts = [f.text for f in build_report(m).headline.findings]
    assert any("3 of 3 upload(s) with 3 client(s) refused (HTTP 413) after" in t for t in texts)


def test_http_clients_spec_errors() -> None:
    base = "name: h\ntargets: [{name: d, path: /x}]\nhttp_clients: "
    with pytest.raises(SpecError, match=r"http_clients\.clients\.0"):
        load_io_spec_text(base + "{url: 'http://h/dav/', clients: [0]}\n", "s.yaml")
    with pytest.raises(SpecError, match="must not contain credentials"):
        load_io_spec_text(base + "{url: 'http://u:p@h/dav/'}\n", "s.yaml")
