"""Two delivery engines on one study run, as two servers on the same results root have
(docs/study.md: any 'gridbench serve' on the root serves a study run): a link revoked or
replaced through one stops or starts working through the other, a step answered through
one is not answered again through the other, and posts racing through both write one
record. Also: a log damaged while served is an error, never a stale answer."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gridbench.errors import ResultsError
from gridbench.study.answers import StepConflict
from gridbench.study.delivery import StudyDelivery
from gridbench.study.load import load_study_spec_text
from gridbench.study.model import StudySpec
from gridbench.study.records import StepDone, log_path, read_log
from gridbench.study.runs import create_study_run
from gridbench.web.app import WebConfig, create_app

SPEC = """\
name: two-servers
purpose: Which tool is easier?
tools:
  - {id: alpha, title: Alpha, tasks: [{id: t1, title: T1, instructions: Do it.}]}
  - {id: beta, title: Beta, tasks: [{id: t1, title: T1, instructions: Do it.}]}
participants: [P01, P02]
"""


def spec() -> StudySpec:
    return load_study_spec_text(SPEC, "spec")[0]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = tmp_path / "run"
    path.mkdir()
    return path


def test_a_link_revoked_or_replaced_through_another_server_follows_here(run: Path) -> None:
    here = StudyDelivery(run, spec())
    secret = here.issue_link("P01")
    assert here.participant_for(secret) == "P01"
    there = StudyDelivery(run, spec())  # the second server, opened after
    there.revoke_link("P01")
    assert here.participant_for(secret) is None  # revoked there: not valid here either
    fresh = there.issue_link("P01")
    assert here.participant_for(fresh) == "P01"
    assert here.overview()[0].link_active


def test_a_revocation_by_another_process_follows(run: Path) -> None:
    here = StudyDelivery(run, spec())
    secret = here.issue_link("P02")
    (run / "spec.yaml").write_text(SPEC)
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from gridbench.study.delivery import StudyDelivery\n"
        "StudyDelivery.open(Path(sys.argv[1])).revoke_link('P02')\n"
    )
    subprocess.run([sys.executable, "-c", code, str(run)], check=True)
    assert here.participant_for(secret) is None


def test_a_step_answered_through_another_server_is_not_answered_again(run: Path) -> None:
    here = StudyDelivery(run, spec())
    assert here.view("P01").step.id == "purpose"
    there = StudyDelivery(run, spec())
    there.act("P01", "purpose", "next", {})
    with pytest.raises(StepConflict):
        here.act("P01", "purpose", "next", {})  # a stale copy would write it twice
    assert here.view("P01").step.id == "task:" + here.view("P01").order.tool_order[0] + ":t1"
    steps = [r for r in read_log(run) if isinstance(r, StepDone)]
    assert len(steps) == 1


def test_posts_racing_through_two_servers_write_one_record(run: Path) -> None:
    engines = [StudyDelivery(run, spec()) for _ in range(2)]
    engines[0].view("P02")
    for e in engines:
        e.view("P02")
    go = threading.Barrier(16)
    outcomes: list[str] = []

    def post(e: StudyDelivery) -> None:
        go.wait()
        try:
            e.act("P02", "purpose", "next", {})
            outcomes.append("written")
        except StepConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=post, args=(engines[k % 2],)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 15 + ["written"]
    assert len([r for r in read_log(run) if isinstance(r, StepDone)]) == 1


def test_a_log_damaged_while_served_is_an_error_not_a_stale_answer(tmp_path: Path) -> None:
    root = tmp_path / "results"
    s, data = load_study_spec_text(SPEC, "spec")
    study = create_study_run(root, s, data, delivery="browser")
    secret = StudyDelivery.open(study.path).issue_link("P01")
    app = create_app(WebConfig(root))
    url = f"/p/{study.path.name}/{secret}"
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        assert c.get(url).status_code == 200
        with log_path(study.path).open("a") as fh:
            fh.write('{"type": "sus", "t_ns": 1, "participant": "P01"}\n')
        r = c.get(url)
        assert r.status_code == 404 and "Traceback" not in r.text  # as any link it cannot check
    with pytest.raises(ResultsError, match=r"study\.jsonl"):
        StudyDelivery(study.path, s).view("P01")


def test_a_filesystem_without_flock_still_delivers(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import fcntl

    def no_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")  # as some NFS mounts answer

    monkeypatch.setattr(fcntl, "flock", no_flock)
    here, there = StudyDelivery(run, spec()), StudyDelivery(run, spec())
    secret = here.issue_link("P01")
    assert there.participant_for(secret) == "P01"  # the log check still follows the other
    assert here.view("P01").step.id == "purpose"
