"""The delivery engine over a real run folder and its real append-only log: whole sessions,
resuming after a crash, replayed and double posts, bad answers, links, the observer, and
forty participants at once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from gridbench.errors import GridbenchError, ResultsError
from gridbench.specload import dump_yaml
from gridbench.study import records as log_module
from gridbench.study.answers import AnswerError, StepConflict
from gridbench.study.delivery import StudyDelivery
from gridbench.study.model import StudySpec
from gridbench.study.records import (
    BackgroundAnswers,
    Finished,
    FreeText,
    LikertAnswer,
    Observation,
    SessionStarted,
    SusAnswer,
    TaskStarted,
    TaskStopped,
    log_path,
    read_log,
)
from gridbench.study.steps import SessionView

SUS = {f"sus{i}": str(1 + i % 5) for i in range(1, 11)}


def spec_data(participants: int = 4, **questionnaires: Any) -> dict[str, Any]:
    q: dict[str, Any] = {
        "background": [
            {"id": "age", "text": "Age?", "kind": "number", "required": True},
            {"id": "role", "text": "Role?", "kind": "choice", "choices": ["student", "staff"]},
            {"id": "field", "text": "Field of work?"},
        ],
        "free_text": [
            {"id": "comments", "text": "Comments?"},
            {"id": "wish", "text": "One wish?"},
        ],
    }
    q.update(questionnaires)
    return {
        "name": "delivery test",
        "purpose": "Which tool is easier?",
        "tools": [
            {
                "id": tool,
                "title": tool.upper(),
                "tasks": [
                    {"id": "submit", "title": "Submit a job", "instructions": "Submit it."},
                    {"id": "monitor", "title": "Watch it", "instructions": "Watch it."},
                ],
            }
            for tool in ("ahe", "cli")
        ],
        "participants": [f"p{k:02d}" for k in range(participants)],
        "questionnaires": q,
        "order": {"seed": 3},
    }


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = tmp_path / "run"
    path.mkdir()
    return path


def engine(run: Path, **kw: Any) -> StudyDelivery:
    return StudyDelivery(run, StudySpec.model_validate(spec_data(**kw)))


def form_for(view: SessionView) -> tuple[str, dict[str, str]]:
    """A valid post for the current step (the answers a participant would give)."""
    kind = view.step.kind
    if kind == "purpose":
        return "next", {}
    if kind == "background":
        return "submit", {"age": " 31 ", "role": "staff", "field": ""}
    if kind == "likert":
        return "submit", {"difficulty": "2", "satisfaction": "5"}
    if kind == "sus":
        return "submit", dict(SUS)
    if kind == "free_text":
        return "submit", {"comments": "<b>fine</b>", "wish": ""}
    raise AssertionError(kind)


def walk(d: StudyDelivery, p: str) -> list[str]:
    """Take participant ``p`` through the whole session; the step ids visited."""
    seen = []
    view = d.view(p)
    while not view.finished:
        seen.append(view.step.id)
        if view.step.kind == "task":
            view = d.act(p, view.step.id, "start", {})
            assert view.task_started_ns is not None
            view = d.act(p, view.step.id, "stop", {})
        else:
            action, form = form_for(view)
            view = d.act(p, view.step.id, action, form)
    return seen


def mine(run: Path, p: str) -> list[Any]:
    return [r for r in read_log(run) if getattr(r, "participant", None) == p]


def test_a_whole_session_writes_its_records_in_order(run: Path) -> None:
    d = engine(run)
    seen = walk(d, "p01")
    order = d.view("p01").order
    expected_steps = ["purpose", "background"]
    expected_types = ["session_started", "step_done", "background"]
    for tool in order.tool_order:
        for task in order.task_order[tool]:
            expected_steps += [f"task:{tool}:{task}", f"likert:{tool}:{task}"]
            expected_types += ["task_started", "task_stopped", "likert"]
        expected_steps.append(f"sus:{tool}")
        expected_types.append("sus")
    expected_steps.append("free_text")
    expected_types += ["free_text", "finished"]
    assert seen == expected_steps

    recs = mine(run, "p01")
    assert [r.type for r in recs] == expected_types
    assert all(r.source == "web" for r in recs)
    assert [r.t_ns for r in recs] == sorted(r.t_ns for r in recs)
    started = recs[0]
    assert isinstance(started, SessionStarted)
    assert started.tool_order == order.tool_order and started.seed == 3
    background = recs[2]
    assert isinstance(background, BackgroundAnswers)
    assert background.answers == {"age": 31.0, "role": "staff", "field": None}
    starts = [r for r in recs if isinstance(r, TaskStarted)]
    stops = [r for r in recs if isinstance(r, TaskStopped)]
    assert len(starts) == len(stops) == 4
    for a, b in zip(starts, stops, strict=True):
        assert (a.tool, a.task) == (b.tool, b.task)
        assert b.elapsed_ns == b.t_ns - a.t_ns
    likert = [r for r in recs if isinstance(r, LikertAnswer)]
    assert {(r.difficulty, r.satisfaction) for r in likert} == {(2, 5)}
    sus = [r for r in recs if isinstance(r, SusAnswer)]
    assert [r.tool for r in sus] == order.tool_order
    assert sus[0].items == [int(SUS[f"sus{i}"]) for i in range(1, 11)]
    free = recs[-2]
    assert isinstance(free, FreeText)
    assert free.answers == {"comments": "<b>fine</b>", "wish": ""}  # stored as given
    assert isinstance(recs[-1], Finished)

    # the end is the end: any post there is a conflict and writes nothing
    size = log_path(run).stat().st_size
    with pytest.raises(StepConflict):
        d.act("p01", "done", "next", {})
    assert d.view("p01").finished
    assert log_path(run).stat().st_size == size


def test_resume_after_a_crash_mid_task_counts_from_the_original_start(run: Path) -> None:
    data = spec_data()
    (run / "spec.yaml").write_text(dump_yaml(data), encoding="utf-8")
    d = StudyDelivery.open(run)
    view = d.view("p02")
    view = d.act("p02", "purpose", "next", {})
    view = d.act("p02", "background", "submit", {"age": "40"})
    task_step = view.step
    assert task_step.kind == "task"
    view = d.act("p02", task_step.id, "start", {})
    start_ns = view.task_started_ns
    assert start_ns is not None
    del d  # the server dies; a new one opens the same folder

    again = StudyDelivery.open(run)
    resumed = again.view("p02")
    assert resumed.step == task_step
    assert resumed.index == view.index
    assert resumed.task_started_ns == start_ns
    assert resumed.order == view.order
    # a second Start (the reopened page's button) is refused: the first one counts
    with pytest.raises(StepConflict, match="started"):
        again.act("p02", task_step.id, "start", {})
    after = again.act("p02", task_step.id, "stop", {})
    assert after.step.kind == "likert"
    stop = mine(run, "p02")[-1]
    assert isinstance(stop, TaskStopped)
    assert stop.elapsed_ns == stop.t_ns - start_ns
    assert [r.type for r in mine(run, "p02")].count("task_started") == 1
    assert [r.type for r in mine(run, "p02")].count("session_started") == 1


def test_resume_on_every_step_shows_the_same_step(run: Path) -> None:
    d = engine(run)
    view = d.view("p00")
    while not view.finished:
        fresh = engine(run).view("p00")
        assert (fresh.step, fresh.index, fresh.task_started_ns) == (
            view.step,
            view.index,
            view.task_started_ns,
        )
        form: dict[str, str] = {}
        if view.step.kind == "task":
            action = "stop" if view.task_started_ns else "start"
        else:
            action, form = form_for(view)
        view = d.act("p00", view.step.id, action, form)
    assert engine(run).view("p00").finished


def test_replays_and_double_posts_are_conflicts_that_write_nothing(run: Path) -> None:
    d = engine(run)
    d.view("p00")
    d.act("p00", "purpose", "next", {})
    size = log_path(run).stat().st_size
    current = d.view("p00").step.id
    assert current == "background"
    attempts: list[tuple[str, str, dict[str, str]]] = [
        ("purpose", "next", {}),  # the double click / the back button
        ("sus:ahe", "submit", dict(SUS)),  # a step not reached yet
        ("background", "next", {"age": "3"}),  # the wrong action for the step
        ("forged", "submit", {}),
    ]
    for step_id, action, form in attempts:
        with pytest.raises(StepConflict) as info:
            d.act("p00", step_id, action, form)
        assert info.value.fix and "reload" in info.value.fix
    assert log_path(run).stat().st_size == size

    view = d.act("p00", "background", "submit", {"age": "3"})
    task = view.step.id
    size = log_path(run).stat().st_size
    with pytest.raises(StepConflict, match="not started"):
        d.act("p00", task, "stop", {})  # Stop before Start
    with pytest.raises(StepConflict):
        d.act("p00", task, "submit", {})
    d.act("p00", task, "start", {})
    size = log_path(run).stat().st_size
    with pytest.raises(StepConflict, match=r"already|is started"):
        d.act("p00", task, "start", {})
    d.act("p00", task, "stop", {})
    with pytest.raises(StepConflict):
        d.act("p00", task, "stop", {})  # the second Stop of a double click
    assert len(mine(run, "p00")) == 5
    assert log_path(run).stat().st_size > size


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("sus3", "0", "outside 1 to 5"),
        ("sus3", "6", "outside 1 to 5"),
        ("sus3", "x", "not a number"),
        ("sus3", "-1", "not a number"),
        ("sus3", "2.5", "not a number"),
        ("sus7", None, "not answered"),
        ("sus10", " ", "not answered"),
    ],
)
def test_bad_sus_answers_name_the_field(
    run: Path, field: str, value: str | None, match: str
) -> None:
    d = engine(run, background=[], likert=False)
    view = d.act("p00", d.view("p00").step.id, "next", {})
    while view.step.kind == "task":
        d.act("p00", view.step.id, "start", {})
        view = d.act("p00", view.step.id, "stop", {})
    assert view.step.kind == "sus"
    form = dict(SUS)
    if value is None:
        del form[field]
    else:
        form[field] = value
    size = log_path(run).stat().st_size
    with pytest.raises(AnswerError, match=match) as info:
        d.act("p00", view.step.id, "submit", form)
    assert info.value.where == field
    assert info.value.fix and "1 to 5" in info.value.fix
    assert log_path(run).stat().st_size == size
    assert d.view("p00").step == view.step
    # corrected, it goes through
    assert d.act("p00", view.step.id, "submit", dict(SUS)).step != view.step


def test_bad_likert_and_background_answers_name_the_field(run: Path) -> None:
    d = engine(run)
    d.view("p00")
    d.act("p00", "purpose", "next", {})
    size = log_path(run).stat().st_size
    cases: list[tuple[dict[str, str], str, str]] = [
        ({}, "age", "must be answered"),
        ({"age": "old"}, "age", "not a number"),
        ({"age": "nan"}, "age", "not a number"),
        ({"age": "30", "role": "boss"}, "role", "not one of the choices"),
        ({"age": "30", "field": "x" * 20_001}, "field", "at most"),
    ]
    for form, where, match in cases:
        with pytest.raises(AnswerError, match=match) as info:
            d.act("p00", "background", "submit", form)
        assert info.value.where == where
        assert info.value.fix
    assert log_path(run).stat().st_size == size
    view = d.act("p00", "background", "submit", {"age": "30"})
    d.act("p00", view.step.id, "start", {})
    view = d.act("p00", view.step.id, "stop", {})
    assert view.step.kind == "likert"
    for form, where in [
        ({"difficulty": "3"}, "satisfaction"),
        ({"difficulty": "0", "satisfaction": "3"}, "difficulty"),
        ({"difficulty": "3", "satisfaction": "6"}, "satisfaction"),
    ]:
        with pytest.raises(AnswerError) as info:
            d.act("p00", view.step.id, "submit", form)
        assert info.value.where == where


def test_links_revoked_forged_replaced_and_never_crossed(run: Path) -> None:
    d = engine(run)
    a = d.issue_link("p00")
    b = d.issue_link("p01")
    assert a != b
    assert d.participant_for(a) == "p00"
    assert d.participant_for(b) == "p01"
    # forged: similar, empty, huge
    for forged in (a[:-1] + ("A" if a[-1] != "A" else "B"), "", a + a, "x" * 10_000, b.upper()):
        assert d.participant_for(forged) is None
    # the secret is never stored, only its hash
    text = log_path(run).read_text(encoding="utf-8")
    assert a not in text and b not in text

    # a new link revokes the previous one; the other participant's link is untouched
    a2 = d.issue_link("p00")
    assert d.participant_for(a) is None
    assert d.participant_for(a2) == "p00"
    assert d.participant_for(b) == "p01"
    d.revoke_link("p01")
    assert d.participant_for(b) is None
    d.revoke_link("p01")  # nothing active: nothing written
    assert [r.type for r in read_log(run)].count("link_revoked") == 1
    # after a restart the same links hold
    again = engine(run)
    assert again.participant_for(a) is None
    assert again.participant_for(b) is None
    assert again.participant_for(a2) == "p00"
    progress = {p.participant: p for p in again.overview()}
    assert progress["p00"].link_active and not progress["p01"].link_active
    assert not progress["p02"].link_active

    with pytest.raises(GridbenchError, match="not one of the study's participants") as info:
        d.issue_link("intruder")
    assert info.value.where == "participant"
    with pytest.raises(GridbenchError):
        d.view("intruder")


def test_one_participants_link_only_ever_reaches_their_own_session(run: Path) -> None:
    d = engine(run, participants=6)
    links = {p: d.issue_link(p) for p in d.spec.participants}
    for p, secret in links.items():
        who = d.participant_for(secret)
        assert who == p
        assert d.view(who).participant == p
    walk(d, "p03")
    assert d.view("p03").finished
    others = [d.view(p) for p in d.spec.participants if p != "p03"]
    assert all(v.step.id == "purpose" for v in others)


def test_the_observer_records_and_corrects_verdicts(run: Path) -> None:
    d = engine(run)
    d.observe("p00", "ahe", "submit", False, 4, "gave up at the login")
    d.observe("p00", "ahe", "submit", True, 2, "")  # corrected
    d.observe("p00", "cli", "monitor", True, None, "")
    obs = [r for r in read_log(run) if isinstance(r, Observation)]
    assert [(o.success, o.failure, o.source) for o in obs] == [
        (False, 4, "observer"),
        (True, 2, "observer"),
        (True, None, "observer"),
    ]
    latest = {p.participant: p.observations for p in d.overview()}
    assert {k: (v.success, v.failure) for k, v in latest["p00"].items()} == {
        ("ahe", "submit"): (True, 2),
        ("cli", "monitor"): (True, None),
    }
    assert latest["p01"] == {}
    size = log_path(run).stat().st_size
    bad: list[tuple[tuple[Any, ...], str]] = [
        (("nobody", "ahe", "submit", True, None, ""), "participant"),
        (("p00", "gui", "submit", True, None, ""), "tool"),
        (("p00", "ahe", "install", True, None, ""), "task"),
        (("p00", "ahe", "submit", "false", None, ""), "success"),
        (("p00", "ahe", "submit", False, 6, ""), "failure"),
        (("p00", "ahe", "submit", False, 0, ""), "failure"),
        (("p00", "ahe", "submit", False, 3, "n" * 5001), "note"),
    ]
    for args, where in bad:
        with pytest.raises(AnswerError) as info:
            d.observe(*args)
        assert info.value.where == where
    assert log_path(run).stat().st_size == size


def test_overview_shows_progress(run: Path) -> None:
    d = engine(run)
    d.view("p01")
    d.act("p01", "purpose", "next", {})
    walk(d, "p02")
    progress = {p.participant: p for p in d.overview()}
    assert list(progress) == ["p00", "p01", "p02", "p03"]
    assert not progress["p00"].started and progress["p00"].step is None
    assert progress["p01"].started and progress["p01"].index == 1
    assert progress["p01"].step is not None and progress["p01"].step.id == "background"
    assert progress["p01"].total == d.view("p01").total
    assert progress["p02"].finished and progress["p02"].index == progress["p02"].total - 1
    assert d.session("p00") is None  # overview and session() start nothing


def test_finished_is_written_without_free_text_and_repaired_after_a_crash(run: Path) -> None:
    d = engine(run, free_text=[])
    walk(d, "p00")
    assert [r.type for r in mine(run, "p00")][-2:] == ["sus", "finished"]

    other = run.parent / "other"
    other.mkdir()
    d = engine(other)
    walk(d, "p00")
    # cut the Finished record, as a crash between the two appends would
    lines = log_path(other).read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"finished"' in lines[-1]
    log_path(other).write_text("".join(lines[:-1]), encoding="utf-8")
    again = engine(other)
    assert again.view("p00").finished
    again.view("p00")
    assert [r.type for r in mine(other, "p00")].count("finished") == 1


def test_forty_participants_at_once(run: Path) -> None:
    d = engine(run, participants=40)
    errors: list[BaseException] = []
    barrier = threading.Barrier(40)

    def participant(p: str) -> None:
        try:
            barrier.wait()
            walk(d, p)
        except BaseException as exc:  # reported below, with the participant
            errors.append(exc)

    threads = [threading.Thread(target=participant, args=(p,)) for p in d.spec.participants]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

    replayed = engine(run, participants=40)
    per_session = 1 + 2 + 4 * 3 + 2 + 2  # started, purpose, background, tasks, sus, end
    records = read_log(run)
    assert len(records) == 40 * per_session
    for p in replayed.spec.participants:
        assert replayed.view(p).finished
        assert len(mine(run, p)) == per_session
    assert all(p.finished for p in replayed.overview())


def test_a_cut_last_line_is_left_out_and_the_study_resumes(run: Path) -> None:
    d = engine(run)
    d.view("p00")
    d.act("p00", "purpose", "next", {})
    with log_path(run).open("a", encoding="utf-8") as fh:
        fh.write(
            '{"type": "step_done", "t_ns": 12, "partic'
        )  # killed mid-write: never acknowledged
    again = engine(run)
    assert again.view("p00").index == d.view("p00").index  # resumes after the last whole record
    n = len(read_log(run))
    action, form = form_for(again.view("p00"))
    again.act("p00", again.view("p00").step.id, action, form)
    assert len(read_log(run)) == n + 1  # the torn fragment was cut, not glued to


def test_damage_inside_the_log_is_one_clear_error(run: Path) -> None:
    d = engine(run)
    d.view("p00")
    d.act("p00", "purpose", "next", {})
    text = log_path(run).read_text(encoding="utf-8").splitlines()
    text[0] = text[0][:20]
    log_path(run).write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ResultsError) as info:
        engine(run)
    assert info.value.where is not None
    assert info.value.where.endswith("study.jsonl:1")
    assert info.value.fix and "delete" in info.value.fix
    assert "Traceback" not in str(info.value)


def test_open_needs_the_runs_spec(run: Path) -> None:
    with pytest.raises(ResultsError, match=r"no spec\.yaml") as info:
        StudyDelivery.open(run)
    assert info.value.fix


def test_view_and_act_do_not_reread_the_log(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = engine(run)

    def no_reads(_: Path) -> list[Any]:
        raise AssertionError("the log was read again")

    monkeypatch.setattr(log_module, "read_log", no_reads)
    walk(d, "p00")
    assert d.view("p00").finished
    monkeypatch.undo()
    assert len(mine(run, "p00")) == 19
