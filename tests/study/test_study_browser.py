"""A study session in real headless Chromium (Playwright) against a live ``gridbench serve``.

The issue's promise: a participant whose browser crashes mid-task reopens the link and
resumes at the exact step, and the task's time spans the crash. The test kills the
Chromium processes (SIGKILL, no clean shutdown) while a task runs, opens the link in a new
browser, finds the running task with its original start, stops it, and finishes the
session partly with the keyboard alone; the log must hold every answer. The pages must be
usable 360 px wide, and run without a console error (which includes any CSP violation).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from playwright.sync_api import sync_playwright

from gridbench.study.delivery import StudyDelivery
from gridbench.study.load import load_study_spec_text
from gridbench.study.records import (
    BackgroundAnswers,
    Finished,
    FreeText,
    LikertAnswer,
    Observation,
    SessionStarted,
    StepDone,
    SusAnswer,
    TaskStarted,
    TaskStopped,
    read_log,
)
from gridbench.study.runs import create_study_run
from web_server import Server, serve

pytestmark = pytest.mark.e2e
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update"]  # fmt: skip
SPEC = """\
name: browser-study
purpose: |
  We compare two ways of running a job on the grid.
  Your answers help us decide which to recommend.
tools:
  - id: alpha
    title: Alpha CLI
    tasks:
      - id: launch
        title: Launch a job
        instructions: Submit hello.sh with Alpha and note the job id.
        docs: >-
          alpha submit --queue short
          --name a-long-job-name-that-must-wrap-on-a-phone-screen-without-any-scrolling hello.sh
      - {id: watch, title: Watch it, instructions: Watch the job until it ends.}
  - id: beta
    title: Beta GUI
    tasks:
      - {id: launch, title: Launch a job, instructions: Launch hello.sh with Beta.}
participants: [P01, P02, P03]
questionnaires:
  background:
    - {id: years, text: How many years have you used grids?, kind: number, required: true}
    - {id: role, text: Your role?, kind: choice, choices: [student, staff]}
comparisons: [{a: alpha, b: beta}]
"""


@dataclass
class Study:
    server: Server
    run: Path
    links: dict[str, str]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Study]:
    base = tmp_path_factory.mktemp("studybrowser")
    root = base / "results"
    spec, data = load_study_spec_text(SPEC, "spec")
    run = create_study_run(root, spec, data, delivery="browser")
    delivery = StudyDelivery.open(run.path)  # links issued before the server opens the log
    secrets = {p: delivery.issue_link(p, "admin") for p in spec.participants}
    with serve(root, base / "serve.log") as s:
        yield Study(s, run.path, {p: f"{s.url}/p/{run.path.name}/{k}" for p, k in secrets.items()})


@pytest.fixture(scope="module")
def pw() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed (scripts/debian-packages.txt)")
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(pw: Any) -> Iterator[Any]:
    b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    yield b
    b.close()


def watched(ctx: Any, errors: list[str]) -> Any:
    pg = ctx.new_page()
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(20_000)
    return pg


def chromium_pids() -> set[int]:
    """The Chromium processes below this test process (Playwright's driver starts them)."""
    me = psutil.Process()
    return {p.pid for p in me.children(recursive=True) if "chrom" in p.name().lower()}


def kind(pg: Any) -> str:
    return str(pg.get_attribute("body", "data-kind"))


def fits_360(pg: Any) -> None:
    width = pg.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, f"{kind(pg)} page is {width} px wide"


def submit(pg: Any, selector: str = "button[type=submit]") -> None:
    with pg.expect_navigation():
        pg.click(selector)


def answer_with_mouse(pg: Any) -> None:
    """Answer the current step by clicking (a task: Start, then Stop)."""
    k = kind(pg)
    if k == "purpose":
        submit(pg)
    elif k == "background":
        pg.fill("#in-years", "3")
        pg.check("input[name=role][value=student]")
        submit(pg)
    elif k == "task":
        submit(pg, "#start")
        submit(pg, "#stop")
    elif k == "likert":
        pg.check("input[name=difficulty][value='2']")
        pg.check("input[name=satisfaction][value='5']")
        submit(pg)
    elif k == "sus":
        for i in range(1, 11):
            pg.check(f"input[name=sus{i}][value='{4 if i % 2 else 2}']")
        submit(pg)
    elif k == "free_text":
        pg.fill("#in-comments", "Beta was easier.")
        submit(pg)
    else:
        raise AssertionError(k)


def tab_to(pg: Any, selector: str, limit: int = 80) -> None:
    """Press Tab until the focus is on ``selector``; the focus must be visible."""
    for _ in range(limit):
        pg.keyboard.press("Tab")
        if pg.evaluate("s => document.activeElement.matches(s)", selector):
            outline = pg.evaluate("getComputedStyle(document.activeElement).outlineStyle")
            assert outline not in ("none", ""), f"no visible focus on {selector}"
            return
    raise AssertionError(f"Tab never reached {selector}")


def choose_by_keyboard(pg: Any, name: str, value: int) -> None:
    """Tab into a radio group (focus lands on its first radio), Space ticks it, each
    ArrowRight ticks the next."""
    tab_to(pg, f"input[name={name}]")
    pg.keyboard.press("Space")
    for _ in range(value - 1):
        pg.keyboard.press("ArrowRight")
    assert pg.evaluate(f"document.querySelector('input[name={name}]:checked').value") == str(value)


def send_by_keyboard(pg: Any) -> None:
    tab_to(pg, "button[type=submit]")
    with pg.expect_navigation():
        pg.keyboard.press("Enter")


def kill_tree(pids: set[int]) -> None:
    """SIGKILL: no unload handler, no clean shutdown (a crash, not a close); returns when
    none of them runs any more."""
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    deadline = time.monotonic() + 10
    while any(_running(p) for p in procs):
        assert time.monotonic() < deadline, "Chromium survived SIGKILL"
        time.sleep(0.05)


def _running(p: psutil.Process) -> bool:
    try:
        return bool(p.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def test_browser_killed_mid_task_resumes_at_the_running_task(
    study: Study, pw: Any, browser: Any
) -> None:
    link = study.links["P01"]
    before = chromium_pids()
    doomed = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    mine = chromium_pids() - before
    assert mine, "the new browser's processes were not found"
    errors: list[str] = []
    pg = watched(doomed.new_context(viewport={"width": 1280, "height": 900}), errors)
    pg.goto(link)
    assert pg.inner_text("h1") == "About this study"
    answer_with_mouse(pg)  # purpose
    answer_with_mouse(pg)  # background
    assert kind(pg) == "task" and pg.locator("#start").count() == 1
    task_step = str(pg.get_attribute("body", "data-step"))
    submit(pg, "#start")
    started_text = pg.inner_text("#started-at")
    started_seen_ns = time.time_ns()  # the Start is on disk: the page after it says so
    pg.wait_for_function("() => document.getElementById('elapsed').textContent !== '0:00:00'")
    assert not errors, errors
    kill_tree(mine)  # the crash
    killed_ns = time.time_ns()
    time.sleep(1.0)  # the participant finds their link again

    # a new browser, a phone-sized window, the same link
    ctx = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True)
    pg = watched(ctx, errors)
    pg.goto(link)
    assert kind(pg) == "task" and pg.get_attribute("body", "data-step") == task_step
    assert pg.locator("#stop").count() == 1 and pg.locator("#start").count() == 0
    assert pg.inner_text("#started-at") == started_text  # the original start, unchanged
    assert "your time" in pg.inner_text("#started-local")  # and in the participant's zone
    assert pg.inner_text("#elapsed") >= "0:00:01"  # counting from it, through the crash
    fits_360(pg)
    stop_pressed_ns = time.time_ns()
    submit(pg, "#stop")
    records = read_log(study.run)
    tool, task = task_step.split(":")[1:]
    starts = [r for r in records if isinstance(r, TaskStarted) and r.participant == "P01"]
    [stop] = [r for r in records if isinstance(r, TaskStopped) and r.participant == "P01"]
    assert [(s.tool, s.task) for s in starts] == [(tool, task)]  # one Start, never restarted
    assert (stop.tool, stop.task) == (tool, task)
    assert stop.elapsed_ns == stop.t_ns - starts[0].t_ns
    assert starts[0].t_ns <= started_seen_ns < killed_ns < stop_pressed_ns <= stop.t_ns
    assert stop.elapsed_ns >= stop_pressed_ns - started_seen_ns  # spans the crash

    # the rest of the session: the first rating and one SUS by keyboard only
    assert kind(pg) == "likert"
    fits_360(pg)
    choose_by_keyboard(pg, "difficulty", 4)
    choose_by_keyboard(pg, "satisfaction", 2)
    send_by_keyboard(pg)
    sus_by_keyboard = False
    for _ in range(20):
        k = kind(pg)
        fits_360(pg)
        if k == "done":
            break
        if k == "sus" and not sus_by_keyboard:
            for i in range(1, 11):
                choose_by_keyboard(pg, f"sus{i}", 1 + i % 5)
            send_by_keyboard(pg)
            sus_by_keyboard = True
        else:
            answer_with_mouse(pg)
    assert kind(pg) == "done" and "every answer is saved" in pg.inner_text("#done")
    assert not errors, errors

    # every answer is in the log, as given
    mine_ = [r for r in read_log(study.run) if getattr(r, "participant", None) == "P01"]
    types = [type(r) for r in mine_]
    assert types.count(SessionStarted) == 1 and types.count(StepDone) == 1
    [bg] = [r for r in mine_ if isinstance(r, BackgroundAnswers)]
    assert bg.answers == {"years": 3.0, "role": "student"}
    assert types.count(TaskStarted) == types.count(TaskStopped) == 3
    likert = [(r.difficulty, r.satisfaction) for r in mine_ if isinstance(r, LikertAnswer)]
    assert likert == [(4, 2), (2, 5), (2, 5)]
    sus = [r.items for r in mine_ if isinstance(r, SusAnswer)]
    assert sus == [[1 + i % 5 for i in range(1, 11)], [4, 2] * 5]
    [text] = [r for r in mine_ if isinstance(r, FreeText)]
    assert text.answers == {"comments": "Beta was easier."}
    assert types[-1] is Finished
    ctx.close()


def test_every_step_fits_a_phone_and_the_observer_records(study: Study, browser: Any) -> None:
    errors: list[str] = []
    ctx = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True)
    pg = watched(ctx, errors)
    pg.goto(study.links["P02"])
    assert pg.evaluate("document.documentElement.lang") == "en"
    assert pg.locator("meta[name=viewport]").count() == 1
    seen = []
    for _ in range(20):
        k = kind(pg)
        seen.append(k)
        fits_360(pg)
        levels = pg.evaluate(
            "Array.from(document.querySelectorAll('h1,h2,h3')).map(h => h.tagName)"
        )
        assert levels[0] == "H1" and levels.count("H1") == 1, levels  # headings in order
        if k == "done":
            break
        if k == "task":  # the running task's page, too
            submit(pg, "#start")
            fits_360(pg)
            submit(pg, "#stop")
            continue
        answer_with_mouse(pg)
    assert set(seen) == {"purpose", "background", "task", "likert", "sus", "free_text", "done"}
    # a second tab of a finished session changes nothing: the page shows the end
    pg.go_back()
    pg.reload()
    assert kind(pg) == "done"
    ctx.close()

    # the observer records a verdict from the admin page (no token on loopback)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = watched(ctx, errors)
    pg.goto(f"{study.server.url}/studies/{study.run.name}/observer")
    form = pg.locator("#p-P02 form.verdict-form").first
    form.locator("input[name=success][value=no]").check()
    form.locator("input[name=failure][value='4']").check()
    form.locator("textarea[name=note]").fill("needed help with the queue name")
    with pg.expect_navigation():
        form.locator("button[type=submit]").click()
    [obs] = [r for r in read_log(study.run) if isinstance(r, Observation)]
    assert (obs.participant, obs.success, obs.failure, obs.note) == (
        "P02", False, 4, "needed help with the queue name",
    )  # fmt: skip
    assert "recorded" in pg.locator("#p-P02 form.verdict-form").first.inner_text()
    ctx.close()
    assert not errors, errors
