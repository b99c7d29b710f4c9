"""``/start``: a run of any family that starts from a spec (``StartsFromSpec``), its
refusals checked in process (a run that really starts is in test_plugin_family.py)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from gridbench.family import StartsFromSpec, family
from gridbench.family.dashboard import WebPages
from gridbench.web.app import WebConfig, create_app
from gridbench.web.security import CSRF_COOKIE

IO_SPEC = """\
name: io-from-the-web
targets:
  - {name: a, path: MISSING}
  - {name: b, path: MISSING}
baseline: a
repetitions: 1
iozone:
  file_size: 1M
  record_size: 128k
"""


def test_families_declare_the_web_seams() -> None:
    assert isinstance(family("io"), StartsFromSpec) and isinstance(family("net"), StartsFromSpec)
    assert not isinstance(family("jobflow"), StartsFromSpec)  # its page is /new
    assert isinstance(family("study"), WebPages) and not isinstance(family("io"), WebPages)


def test_start_offers_the_families_and_refuses_bad_specs(tmp_path: Path) -> None:
    root = tmp_path / "results"
    missing = tmp_path / "no-such-dir"
    app = create_app(WebConfig(root))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        page = c.get("/start", params={"kind": "io"})
        assert page.status_code == 200
        assert '<option value="io" selected>' in page.text and '<option value="net"' in page.text
        assert (
            '<option value="jobflow"' not in page.text and '<option value="study"' not in page.text
        )
        csrf = c.cookies.get(CSRF_COOKIE) or ""
        r = c.post("/start", data={"kind": "io", "yaml": "name: x\n<b>"})
        assert r.status_code == 403  # no CSRF token
        r = c.post("/start", data={"csrf": csrf, "kind": "io", "yaml": "name: x\n"})
        assert r.status_code == 422 and 'id="spec-error"' in r.text
        r = c.post("/start", data={"csrf": csrf, "kind": "io", "yaml": "name: <b>x</b>\n"})
        assert r.status_code == 422 and "<b>x</b>" not in r.text  # escaped when shown back
        r = c.post("/start", data={"csrf": csrf, "kind": "jobflow", "yaml": "name: x\n"})
        assert r.status_code == 422 and "no family" in r.text
        spec = IO_SPEC.replace("MISSING", str(missing))
        r = c.post("/start", data={"csrf": csrf, "kind": "io", "yaml": spec})
        assert r.status_code == 422 and 'id="spec-error"' in r.text, r.text[-2000:]
    # nothing was started, so nothing was written
    assert not root.exists() or not [p for p in root.iterdir() if not p.name.startswith(".")]
