"""Counterbalancing (Williams square, task shuffles), the session's steps replayed from the
log, and personal links: the pure parts of study delivery."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gridbench.errors import ResultsError
from gridbench.study.design import balanced_latin_square, session_order, task_order
from gridbench.study.links import active_links, link_hash, new_secret
from gridbench.study.model import StudySpec
from gridbench.study.records import (
    LikertAnswer,
    LinkIssued,
    LinkRevoked,
    Record,
    SessionStarted,
    StepDone,
    TaskStarted,
    TaskStopped,
)
from gridbench.study.steps import replay, steps_for


def spec_data(
    tools: int = 3, tasks: int = 3, participants: int = 6, **extra: Any
) -> dict[str, Any]:
    return {
        "name": "design test",
        "purpose": "compare the tools",
        "tools": [
            {
                "id": f"tool{i}",
                "title": f"Tool {i}",
                "tasks": [
                    {"id": f"t{j}", "title": f"Task {j}", "instructions": "do it"}
                    for j in range(tasks)
                ],
            }
            for i in range(tools)
        ],
        "participants": [f"p{k:02d}" for k in range(participants)],
        **extra,
    }


def make_spec(**kw: Any) -> StudySpec:
    return StudySpec.model_validate(spec_data(**kw))


@pytest.mark.parametrize("n", range(2, 8))
def test_williams_square_is_balanced(n: int) -> None:
    square = balanced_latin_square(n)
    assert len(square) == (n if n % 2 == 0 else 2 * n)
    for row in square:
        assert sorted(row) == list(range(n))
    reps = len(square) // n
    positions = Counter((tool, pos) for row in square for pos, tool in enumerate(row))
    assert positions == {(tool, pos): reps for tool in range(n) for pos in range(n)}
    pairs = Counter((row[i], row[i + 1]) for row in square for i in range(n - 1))
    assert pairs == {(a, b): reps for a in range(n) for b in range(n) if a != b}


def test_square_of_one_tool_and_of_none() -> None:
    assert all(row == [0] for row in balanced_latin_square(1))
    with pytest.raises(ValueError, match="at least one tool"):
        balanced_latin_square(0)


def test_session_order_follows_the_square_rows_in_participant_order() -> None:
    spec = make_spec(tools=4, participants=9)
    square = balanced_latin_square(4)
    for k, p in enumerate(spec.participants):
        order = session_order(spec, p)
        assert order.participant == p
        assert order.square_row == k % 4
        assert order.tool_order == [f"tool{i}" for i in square[k % 4]]
        assert order.seed == spec.order.seed
        assert set(order.task_order) == set(order.tool_order)
        assert order.t_ns > 0


def test_task_shuffles_are_recorded_and_reproducible() -> None:
    spec = make_spec(tools=2, tasks=6, participants=10, order={"seed": 7})
    orders = {p: session_order(spec, p) for p in spec.participants}
    again = {p: session_order(spec, p) for p in spec.participants}
    for p in spec.participants:
        assert orders[p].task_order == again[p].task_order
        for tool, tasks in orders[p].task_order.items():
            assert sorted(tasks) == [f"t{j}" for j in range(6)]
            assert tasks == task_order(spec, p, tool)
    # shuffled: ten participants times two tools do not all keep the declared order
    shapes = {tuple(t) for o in orders.values() for t in o.task_order.values()}
    assert len(shapes) > 5
    # another seed gives other shuffles
    other = make_spec(tools=2, tasks=6, participants=10, order={"seed": 8})
    assert any(
        session_order(other, p).task_order != orders[p].task_order for p in spec.participants
    )


def test_no_shuffle_and_no_square_keep_the_declared_order() -> None:
    spec = make_spec(order={"shuffle_tasks": False, "latin_square": False})
    for p in spec.participants:
        order = session_order(spec, p)
        assert order.square_row == 0
        assert order.tool_order == ["tool0", "tool1", "tool2"]
        assert all(tasks == ["t0", "t1", "t2"] for tasks in order.task_order.values())


def test_session_order_refuses_an_undeclared_participant() -> None:
    with pytest.raises(ValueError, match="'stranger' is not declared"):
        session_order(make_spec(), "stranger")


def test_steps_follow_the_recorded_order_and_the_questionnaires() -> None:
    spec = make_spec(
        tools=2,
        tasks=2,
        questionnaires={"background": [{"id": "age", "text": "Age?", "kind": "number"}]},
    )
    order = session_order(spec, "p01")
    ids = [s.id for s in steps_for(spec, order)]
    expected = ["purpose", "background"]
    for tool in order.tool_order:
        for task in order.task_order[tool]:
            expected += [f"task:{tool}:{task}", f"likert:{tool}:{task}"]
        expected.append(f"sus:{tool}")
    expected += ["free_text", "done"]
    assert ids == expected

    bare = make_spec(
        tools=2,
        tasks=2,
        questionnaires={"sus": False, "likert": False, "free_text": []},
        order={"shuffle_tasks": False},
    )
    steps = steps_for(bare, session_order(bare, "p00"))
    assert [s.id for s in steps] == [
        "purpose",
        "task:tool0:t0",
        "task:tool0:t1",
        "task:tool1:t0",
        "task:tool1:t1",
        "done",
    ]
    assert [s.kind for s in steps][-1] == "done"
    assert (steps[1].tool, steps[1].task) == ("tool0", "t0")


def test_steps_refuse_an_order_the_spec_no_longer_has() -> None:
    spec = make_spec()
    order = session_order(spec, "p00")
    changed = make_spec(tools=2)  # tool2 was removed after the session started
    assert "tool2" in order.tool_order
    with pytest.raises(ResultsError, match="tool2") as info:
        steps_for(changed, order)
    assert info.value.fix and "spec.yaml" in info.value.fix


def test_replay_finds_the_current_step_and_the_original_start() -> None:
    spec = make_spec(tools=2, tasks=2, order={"shuffle_tasks": False, "latin_square": False})
    order = session_order(spec, "p00")
    recs: list[Record] = [
        order,
        StepDone(t_ns=2, participant="p00", step="purpose"),
        # another participant's records are ignored
        StepDone(t_ns=3, participant="p01", step="purpose"),
        TaskStarted(t_ns=100, participant="p00", tool="tool0", task="t0"),
    ]
    assert replay(spec, recs, "p01") is None
    assert replay(spec, recs[1:], "p00") is None  # no session_started yet
    view = replay(spec, recs, "p00")
    assert view is not None
    assert view.step.id == "task:tool0:t0"
    assert view.index == 1 and not view.finished
    assert view.task_started_ns == 100
    assert view.order == order
    # a second Start (it cannot be written, but a log may hold one) keeps the first
    recs.append(TaskStarted(t_ns=200, participant="p00", tool="tool0", task="t0"))
    view = replay(spec, recs, "p00")
    assert view is not None and view.task_started_ns == 100
    recs += [
        TaskStopped(t_ns=300, participant="p00", tool="tool0", task="t0", elapsed_ns=200),
        LikertAnswer(
            t_ns=301, participant="p00", tool="tool0", task="t0", difficulty=2, satisfaction=4
        ),
    ]
    view = replay(spec, recs, "p00")
    assert view is not None
    assert view.step.id == "task:tool0:t1"
    assert view.task_started_ns is None
    assert view.total == len(steps_for(spec, order))


def test_active_links_keep_the_latest_unrevoked_link() -> None:
    a, b, c = (link_hash(new_secret()) for _ in range(3))
    recs: list[Record] = [
        LinkIssued(t_ns=1, participant="p00", link_hash=a),
        LinkIssued(t_ns=2, participant="p01", link_hash=b),
        LinkIssued(t_ns=3, participant="p00", link_hash=c),  # replaces a
    ]
    assert active_links(recs) == {c: "p00", b: "p01"}
    recs.append(LinkRevoked(t_ns=4, participant="p01"))
    assert active_links(recs) == {c: "p00"}
    recs.append(LinkIssued(t_ns=5, participant="p01", link_hash=b))
    assert active_links(recs) == {c: "p00", b: "p01"}


def test_secrets_are_long_distinct_and_hashed() -> None:
    secrets = {new_secret() for _ in range(100)}
    assert len(secrets) == 100
    for s in secrets:
        assert len(s) >= 43 and set(s) <= set(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        )
    h = link_hash("abc")
    assert h == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert isinstance(session_order(make_spec(), "p00"), SessionStarted)
