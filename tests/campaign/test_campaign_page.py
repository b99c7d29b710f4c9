"""The dashboard's campaign pages: the list, one campaign's components × units with
their verdicts and incidents, links to each run and to the documents, live progress."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from campaign_helpers import synthetic_campaign
from gridbench.web.app import WebConfig, create_app


def _client(root: Path) -> TestClient:
    return TestClient(create_app(WebConfig(root)), base_url="http://127.0.0.1")


def test_a_finished_campaign_s_page(tmp_path: Path) -> None:
    root = tmp_path / "results"
    folder = synthetic_campaign(root, tmp_path, 5)
    c = _client(root)
    listed = c.get("/campaigns")
    assert listed.status_code == 200 and folder.name in listed.text
    assert "4 of 5" in listed.text
    page = c.get(f"/campaigns/{folder.name}")
    assert page.status_code == 200
    text = page.text
    assert text.count("data-unit=") == 5
    assert 'data-unit="aem.u001" data-verdict="error"' in text
    assert "IN-001" in text and "&lt;b&gt;made up&lt;/b&gt;" in text  # escaped
    assert 'http-equiv="refresh"' not in text  # finished: no reload
    for doc in ("index", "test-plan", "test-log", "incidents", "summary"):
        assert f"/campaigns/{folder.name}/docs/{doc}.html" in text
        served = c.get(f"/campaigns/{folder.name}/docs/{doc}.html")
        assert served.status_code == 200 and served.headers["content-type"].startswith("text/html")
        assert c.get(f"/campaigns/{folder.name}/docs/{doc}.md").status_code == 200
    assert c.get(f"/campaigns/{folder.name}/docs/..%2Fcampaign.json").status_code == 404
    assert c.get(f"/campaigns/{folder.name}/docs/campaign.json").status_code == 404
    assert c.get("/campaigns/nothing-here").status_code == 404


def test_a_running_campaign_s_page_reloads_with_its_progress(tmp_path: Path) -> None:
    root = tmp_path / "results"
    folder = synthetic_campaign(root, tmp_path, 3, finish=False)  # this process "runs" it
    page = _client(root).get(f"/campaigns/{folder.name}")
    assert page.status_code == 200
    assert 'http-equiv="refresh"' in page.text and 'id="campaign-progress"' in page.text
    assert "2 of 3 repetitions finished" in " ".join(page.text.split())
    assert 'data-unit="aem.u002" data-verdict="not run"' in page.text or (
        'data-unit="aem.u002" data-verdict="running"' in page.text
    )


def test_a_document_s_links_lead_to_the_run_and_the_log(tmp_path: Path) -> None:
    root = tmp_path / "results"
    folder = synthetic_campaign(root, tmp_path, 2)
    (folder / "units" / "aem.u000.r1.a1.log").write_text("hello from the unit\n")
    c = _client(root)
    log = c.get(f"/campaigns/{folder.name}/units/aem.u000.r1.a1.log")
    assert log.status_code == 200 and "hello from the unit" in log.text
    # no run was recorded for it: the link says so rather than guessing
    miss = c.get(
        f"/campaigns/{folder.name}/runs/aem.u000.r1.a1/report.html", follow_redirects=False
    )
    assert miss.status_code == 404


def test_the_pages_read_a_campaign_s_files_of_other_types(tmp_path: Path) -> None:
    """campaign.json and summary.json are foreign input: fields of another type are left
    out, never an internal error (issue 41)."""
    import json

    root = tmp_path / "results"
    folder = synthetic_campaign(root, tmp_path, 2)
    state = json.loads((folder / "campaign.json").read_text())
    state.update(progress="[red]x", running=5)
    (folder / "campaign.json").write_text(json.dumps(state))
    s = json.loads((folder / "docs" / "summary.json").read_text())
    s["counts"] = [1]
    del s["components"]
    (folder / "docs" / "summary.json").write_text(json.dumps(s))
    c = _client(root)
    for url in ("/campaigns", f"/campaigns/{folder.name}"):
        page = c.get(url)
        assert page.status_code == 200, (url, page.text[-400:])
        assert "[red]x" not in page.text
