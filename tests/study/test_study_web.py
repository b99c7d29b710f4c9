"""The study's pages in-process (FastAPI's TestClient over a real run folder and its log):
personal links (forged, another's, revoked, replaced), replayed and cross-site posts,
answers out of range, the token on admin pages only, escaping of free text and notes, and
the observer's verdicts. The browser walk is in test_study_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gridbench.store.layout import RunDir
from gridbench.study.delivery import StudyDelivery
from gridbench.study.load import load_study_spec_text
from gridbench.study.records import (
    FreeText,
    LikertAnswer,
    Observation,
    StepDone,
    SusAnswer,
    TaskStopped,
    read_log,
)
from gridbench.study.runs import create_study_run
from gridbench.study.web_pages import NOT_VALID
from gridbench.web.app import WebConfig, create_app
from gridbench.web.security import AccessPolicy, hash_token

TOKEN = "study-admin-token-0123456789abcdef"
XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'
SPEC = """\
name: web-study
purpose: Which of two tools is easier to use?
tools:
  - id: alpha
    title: Alpha CLI
    tasks:
      - {id: launch, title: Launch a job, instructions: Launch the job., docs: "alpha run JOB"}
      - {id: watch, title: Watch it, instructions: Watch the job until it ends.}
  - id: beta
    title: Beta GUI
    tasks:
      - {id: launch, title: Launch a job, instructions: Launch it with Beta.}
participants: [P01, P02, P03, P04, P05, P06, P07, P08]
questionnaires:
  background:
    - {id: years, text: Years of experience?, kind: number, required: true}
    - {id: role, text: Your role?, kind: choice, choices: [student, staff]}
comparisons: [{a: alpha, b: beta}]
"""


@dataclass
class Study:
    client: TestClient  # no token: what a participant has
    admin: TestClient  # the admin's bearer token
    run: RunDir
    secrets: dict[str, str]

    def url(self, who: str) -> str:
        return f"/p/{self.run.path.name}/{self.secrets[who]}"

    @property
    def admin_url(self) -> str:
        return f"/studies/{self.run.path.name}"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Study]:
    root = tmp_path_factory.mktemp("studyweb") / "results"
    spec, data = load_study_spec_text(SPEC, "spec")
    run = create_study_run(root, spec, data, delivery="browser")
    delivery = StudyDelivery.open(run.path)
    secrets = {p: delivery.issue_link(p, "admin") for p in spec.participants}
    policy = AccessPolicy(token_hash=hash_token(TOKEN))
    app = create_app(WebConfig(root, policy=policy))
    with (
        TestClient(app, base_url="http://127.0.0.1") as client,
        TestClient(
            app, base_url="http://127.0.0.1", headers={"authorization": f"Bearer {TOKEN}"}
        ) as admin,
    ):
        yield Study(client, admin, run, secrets)


def csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, "no CSRF field in the page"
    return m.group(1)


def current(html: str) -> tuple[str, str]:
    """(kind, step id) of a participant page."""
    m = re.search(r'data-kind="([^"]*)" data-step="([^"]*)"', html)
    assert m, html[-2000:]
    return m.group(1), m.group(2)


ANSWERS: dict[str, tuple[str, dict[str, str]]] = {
    "purpose": ("next", {}),
    "background": ("submit", {"years": "4", "role": "staff"}),
    "likert": ("submit", {"difficulty": "2", "satisfaction": "4"}),
    "sus": ("submit", {f"sus{i}": str(1 + i % 5) for i in range(1, 11)}),
    "free_text": ("submit", {"comments": "fine"}),
}


def advance(c: TestClient, url: str, **override: str) -> tuple[str, str]:
    """Answer the current step (a task: start then stop); returns the step answered."""
    page = c.get(url)
    assert page.status_code == 200, page.text[-1000:]
    kind, step = current(page.text)
    fields: dict[str, str] = {}
    if kind == "task":
        action = "stop" if 'id="stop"' in page.text else "start"
    else:
        action, fields = ANSWERS[kind]
    r = c.post(
        url,
        data={"csrf": csrf(page.text), "step": step, "action": action, **fields, **override},
        follow_redirects=False,
    )
    assert r.status_code == 303, (step, r.status_code, r.text[-1500:])
    assert r.headers["location"] == url  # post/redirect/get to the same page
    return kind, step


def walk(c: TestClient, url: str, until: str = "done", **override: str) -> list[str]:
    """Answer steps until the page shows a step of kind ``until``; the step ids seen."""
    seen: list[str] = []
    for _ in range(40):
        if current(c.get(url).text)[0] == until:
            return seen
        seen.append(advance(c, url, **override)[1])
    raise AssertionError(f"never reached {until}: {seen}")


def log_lines(run: RunDir) -> int:
    return len(read_log(run.path))


def test_forged_and_unknown_links_are_the_same_404(study: Study) -> None:
    c, rid = study.client, study.run.path.name
    forged = c.get(f"/p/{rid}/{'A' * 43}")
    missing = c.get(f"/p/no-such-run/{study.secrets['P01']}")
    traversal = c.get(f"/p/..%2f..%2fetc/{study.secrets['P01']}")
    for r in (forged, missing, traversal):
        assert r.status_code == 404
        assert NOT_VALID in r.text
    assert forged.text == missing.text  # nothing says whether the run exists
    # another run's folder that is not a study: the same answer
    other = study.run.path.parent / "20200101T000000Z-jobflow"
    RunDir(other).update_experiment(id=other.name, name="jobflow", status="complete")
    assert c.get(f"/p/{other.name}/{study.secrets['P01']}").text == forged.text


def test_a_link_reaches_its_own_session_only(study: Study) -> None:
    c = study.client
    delivery = StudyDelivery.open(study.run.path)
    owners = {p: delivery.participant_for(s) for p, s in study.secrets.items()}
    assert owners == {p: p for p in study.secrets}  # each secret maps to its participant only
    # P02 answers with words of its own; P01 then walks its whole session
    marker = "only-P02-wrote-this-7c1e"
    walk(c, study.url("P02"), until="task")
    walk(c, study.url("P02"), until="free_text")
    advance(c, study.url("P02"), comments=marker)
    assert current(c.get(study.url("P01")).text)[0] == "purpose"  # untouched by P02's posts
    pages = []
    for _ in range(walk_length := 20):
        pages.append(c.get(study.url("P01")).text)
        if current(pages[-1])[0] == "done":
            break
        advance(c, study.url("P01"))
    assert current(pages[-1])[0] == "done", walk_length
    for html in pages:
        # nothing links anywhere but to the page itself and the static files
        hrefs = re.findall(r'(?:href|action|src)="([^"]*)"', html)
        own = ("/static/", "#", "data:", study.url("P01"))
        assert all(h.startswith(own) for h in hrefs), hrefs
        html = html.replace(study.url("P01"), "")  # (a random secret could hold "P02")
        assert marker not in html and "P02" not in html and study.secrets["P02"] not in html
        assert "P01" not in html  # pseudonyms are never shown to participants either
        assert "/studies/" not in html and 'href="/"' not in html
    mine = [r for r in read_log(study.run.path) if getattr(r, "participant", None) == "P01"]
    assert any(isinstance(r, SusAnswer) for r in mine)
    assert not any(isinstance(r, FreeText) and marker in r.answers.values() for r in mine)


def test_replayed_post_writes_nothing(study: Study) -> None:
    c, url = study.client, study.url("P03")
    page = c.get(url).text
    assert current(page) == ("purpose", "purpose")
    form = {"csrf": csrf(page), "step": "purpose", "action": "next"}
    assert c.post(url, data=form, follow_redirects=False).status_code == 303
    n = log_lines(study.run)
    again = c.post(url, data=form, follow_redirects=False)  # the back button, a double click
    assert again.status_code == 303 and again.headers["location"] == url
    assert log_lines(study.run) == n
    assert current(c.get(url).text)[0] == "background"  # the current step is shown
    purpose_done = [
        r for r in read_log(study.run.path) if isinstance(r, StepDone) and r.participant == "P03"
    ]
    assert len(purpose_done) == 1
    # a task's Start pressed twice (two tabs): one start, and the Stop counts from it
    walk(c, url, until="task")
    task_page = c.get(url).text
    _, step = current(task_page)
    start = {"csrf": csrf(task_page), "step": step, "action": "start"}
    c.post(url, data=start, follow_redirects=False)
    started = c.get(url).text
    stamp = re.search(r'data-started-ns="(\d+)"', started)
    assert stamp and 'id="stop"' in started
    n = log_lines(study.run)
    assert c.post(url, data=start, follow_redirects=False).status_code == 303
    assert log_lines(study.run) == n
    assert re.search(r'data-started-ns="(\d+)"', c.get(url).text)[1] == stamp[1]  # type: ignore[index]


def test_post_without_csrf_is_refused(study: Study) -> None:
    c, url = study.client, study.url("P04")
    page = c.get(url).text
    n = log_lines(study.run)
    for form in (
        {"step": "purpose", "action": "next"},  # no token
        {"csrf": "x" * 43, "step": "purpose", "action": "next"},  # not the cookie's
    ):
        r = c.post(url, data=form, follow_redirects=False)
        assert r.status_code == 403 and "CSRF" in r.text
    # the right token from another site's page
    r = c.post(
        url,
        data={"csrf": csrf(page), "step": "purpose", "action": "next"},
        headers={"origin": "http://evil.example"},
        follow_redirects=False,
    )
    assert r.status_code == 403
    assert log_lines(study.run) == n
    assert current(c.get(url).text)[0] == "purpose"


def test_participants_need_no_token_and_admin_pages_do(study: Study) -> None:
    c = study.client
    assert c.get(study.url("P05")).status_code == 200  # no token, no login
    for path in (study.admin_url, study.admin_url + "/observer"):
        r = c.get(path, headers={"accept": "text/html"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert c.get(path, headers={"accept": "application/json"}).status_code == 401
    # a participant's link gives no access to the admin's actions either
    page = c.get(study.url("P05")).text
    for path, data in (
        (f"{study.admin_url}/links/P06", {"action": "issue"}),
        (f"{study.admin_url}/observer", {"participant": "P06", "tool": "alpha"}),
    ):
        r = c.post(path, data={"csrf": csrf(page), **data}, follow_redirects=False)
        assert r.status_code == 401
    assert study.admin.get(study.admin_url).status_code == 200


def test_answers_out_of_range_are_422_naming_the_field(study: Study) -> None:
    c, url = study.client, study.url("P06")
    walk(c, url, until="background")
    page = c.get(url).text
    n = log_lines(study.run)
    r = c.post(url, data={"csrf": csrf(page), "step": "background", "action": "submit",
                          "years": "many", "role": "staff"})  # fmt: skip
    assert r.status_code == 422
    assert 'data-field="years"' in r.text and 'aria-invalid="true"' in r.text
    assert 'value="many"' in r.text  # what was typed is kept
    walk(c, url, until="likert")
    for fields, field in (
        ({"difficulty": "0", "satisfaction": "3"}, "difficulty"),
        ({"difficulty": "3", "satisfaction": "6"}, "satisfaction"),
        ({"difficulty": "3"}, "satisfaction"),
    ):
        page = c.get(url).text
        _, step = current(page)
        r = c.post(url, data={"csrf": csrf(page), "step": step, "action": "submit", **fields})
        assert r.status_code == 422, fields
        assert f'data-field="{field}"' in r.text and f'href="#f-{field}"' in r.text
    walk(c, url, until="sus")
    page = c.get(url).text
    _, step = current(page)
    sus = {f"sus{i}": "3" for i in range(1, 11)}
    sus["sus7"] = "6"
    r = c.post(url, data={"csrf": csrf(page), "step": step, "action": "submit", **sus})
    assert r.status_code == 422 and 'data-field="sus7"' in r.text and "SUS item 7" in r.text
    assert r.text.count("checked") == 9  # the nine good answers stay ticked
    fixed = {**sus, "sus7": "3"}
    assert c.post(url, data={"csrf": csrf(page), "step": step, "action": "submit",
                             **fixed}).status_code == 200  # fmt: skip
    mine = [r for r in read_log(study.run.path) if getattr(r, "participant", None) == "P06"]
    likert = [r for r in mine if isinstance(r, LikertAnswer)]
    assert all(r.difficulty is not None and 1 <= r.difficulty <= 5 for r in likert)
    assert all(r.satisfaction is not None and 1 <= r.satisfaction <= 5 for r in likert)
    assert [r.items for r in mine if isinstance(r, SusAnswer)] == [[3] * 10]
    assert log_lines(study.run) > n


def test_free_text_and_notes_are_escaped_on_admin_pages(study: Study) -> None:
    c, url = study.client, study.url("P07")
    walk(c, url, until="free_text")
    advance(c, url, comments=XSS)
    assert current(c.get(url).text)[0] == "done"
    [text] = [
        r for r in read_log(study.run.path) if isinstance(r, FreeText) and r.participant == "P07"
    ]
    assert text.answers["comments"] == XSS  # stored as given
    page = study.admin.get(study.admin_url).text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "<script>alert" not in page and "<img src=x" not in page
    # the observer's note, the same
    obs = study.admin.get(study.admin_url + "/observer").text
    r = study.admin.post(
        study.admin_url + "/observer",
        data={"csrf": csrf(obs), "participant": "P07", "tool": "beta", "task": "launch",
              "success": "no", "failure": "4", "note": XSS},
        follow_redirects=False,
    )  # fmt: skip
    assert r.status_code == 303 and r.headers["location"].endswith("/observer#p-P07")
    obs = study.admin.get(study.admin_url + "/observer").text
    assert "&lt;script&gt;" in obs and "<script>alert" not in obs and "<img src=x" not in obs


def test_observer_records_verdicts_and_refuses_bad_ones(study: Study) -> None:
    a, path = study.admin, study.admin_url + "/observer"
    page = a.get(path).text
    assert 'id="p-P01"' in page and 'id="p-P08"' in page
    token = csrf(page)
    base = {"csrf": token, "participant": "P08", "tool": "alpha", "task": "watch"}
    n = log_lines(study.run)
    for bad, field in (
        ({"success": "maybe"}, "success"),
        ({"success": "yes", "failure": "7"}, "failure"),
        ({"success": "yes", "task": "nope"}, "task"),
        ({"success": "yes", "participant": "P99"}, "participant"),
    ):
        r = a.post(path, data={**base, **bad})
        assert r.status_code == 422 and f"{field}:" in r.text, (bad, r.text[-800:])
    assert log_lines(study.run) == n
    assert a.post(path, data={**base, "success": "yes", "failure": "1"},
                  follow_redirects=False).status_code == 303  # fmt: skip
    assert a.post(path, data={**base, "success": "no", "failure": "5", "note": "gave up"},
                  follow_redirects=False).status_code == 303  # fmt: skip
    seen = [
        r for r in read_log(study.run.path) if isinstance(r, Observation) and r.participant == "P08"
    ]
    assert [(r.success, r.failure, r.note, r.source) for r in seen] == [
        (True, 1, "", "observer"),
        (False, 5, "gave up", "observer"),
    ]
    page = a.get(path).text
    section = page[page.index('id="p-P08"') :]
    assert "gave up" in section.split("</section>")[0]  # the latest verdict is shown
    # beside one participant: their forms only, and back to them after a save
    one = a.get(path, params={"participant": "P08"}).text
    assert 'id="p-P08"' in one and 'id="p-P01"' not in one and "show all" in one
    r = a.post(path, data={**base, "success": "yes", "only": "P08"}, follow_redirects=False)
    assert r.headers["location"].endswith("/observer?participant=P08#p-P08")
    assert 'id="p-P01"' in a.get(path, params={"participant": "nobody"}).text  # all


def test_revoked_and_replaced_links_stop_working(study: Study) -> None:
    c, a = study.client, study.admin
    old = study.url("P05")
    assert c.get(old).status_code == 200
    admin = a.get(study.admin_url).text
    assert 'data-participant="P05"' in admin
    r = a.post(f"{study.admin_url}/links/P05", data={"csrf": csrf(admin), "action": "revoke"},
               follow_redirects=False)  # fmt: skip
    assert r.status_code == 303
    gone = c.get(old)
    assert gone.status_code == 404 and NOT_VALID in gone.text
    # a new link: shown once, on the answer to the post only
    r = a.post(f"{study.admin_url}/links/P05", data={"csrf": csrf(admin), "action": "issue"})
    assert r.status_code == 200
    m = re.search(r'id="new-link-url">http://127\.0\.0\.1(/p/[^<]+)</code>', r.text)
    assert m, r.text[-1500:]
    new = m.group(1)
    assert new.split("/")[-1] not in a.get(study.admin_url).text
    assert new.split("/")[-1] not in study.run.path.joinpath("study.jsonl").read_text()
    assert c.get(new).status_code == 200  # resumes the same session
    # issuing again replaces it
    r = a.post(f"{study.admin_url}/links/P05", data={"csrf": csrf(admin), "action": "issue"})
    assert c.get(new).status_code == 404
    r = a.post(f"{study.admin_url}/links/P99", data={"csrf": csrf(admin), "action": "issue"})
    assert r.status_code == 422 and "participant" in r.text


def test_task_is_timed_on_the_server(study: Study) -> None:
    c, url = study.client, study.url("P04")
    walk(c, url, until="task")
    page = c.get(url).text
    assert 'id="start"' in page and "Task 1 of 3" in page
    advance(c, url)  # start
    running = c.get(url).text
    assert "Started at" in running and 'role="timer"' in running
    started = int(re.search(r'data-started-ns="(\d+)"', running)[1])  # type: ignore[index]
    advance(c, url)  # stop
    [stop] = [
        r for r in read_log(study.run.path) if isinstance(r, TaskStopped) and r.participant == "P04"
    ]
    assert stop.t_ns - started == stop.elapsed_ns  # from the server's own Start stamp
    assert current(c.get(url).text)[0] == "likert"


def test_admin_pages_of_a_run_that_is_not_a_study(study: Study) -> None:
    other = study.run.path.parent / "20200101T000001Z-notstudy"
    RunDir(other).update_experiment(id=other.name, name="n", kind="net", status="complete")
    assert study.admin.get(f"/studies/{other.name}").status_code == 404
    assert study.admin.get(f"/studies/{other.name}/observer").status_code == 404
    page = study.admin.get(study.admin_url).text
    form = {"csrf": csrf(page), "action": "issue"}
    assert study.admin.post(f"/studies/{other.name}/links/P01", data=form).status_code == 404


def test_an_answer_that_cannot_be_saved_is_not_acknowledged(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gridbench.study import records

    c, url = study.client, study.url("P08")
    page = c.get(url).text
    assert current(page)[0] == "purpose"

    def full(run_path: Path, record: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(records, "append", full)  # the disk, full at the moment of the answer
    r = c.post(url, data={"csrf": csrf(page), "step": "purpose", "action": "next"})
    assert r.status_code == 503 and "could not be saved" in r.text
    assert "Traceback" not in r.text
    monkeypatch.undo()
    assert current(c.get(url).text)[0] == "purpose"  # not moved on: nothing was acknowledged
    advance(c, url)
    assert current(c.get(url).text)[0] == "background"


def test_the_run_page_links_to_the_study_pages_and_does_not_call_it_orphaned(
    study: Study,
) -> None:
    page = study.admin.get(f"/experiments/{study.run.path.name}").text
    assert f'href="{study.admin_url}"' in page and f'href="{study.admin_url}/observer"' in page
    assert "was not started by this server" not in page  # a study is served, not run
