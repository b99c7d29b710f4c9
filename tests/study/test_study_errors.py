"""Bad input and odd figures the study family must answer clearly (a review's findings):
an admin post on a study whose log is damaged, the power analysis' solver failing
quietly, and the report's words when a stated effect is too small to plan a cohort for."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gridbench.errors import SpecError
from gridbench.store import catalogue
from gridbench.study.delivery import StudyDelivery
from gridbench.study.load import load_study_spec_text
from gridbench.study.records import log_path
from gridbench.study.report_extras import power_statements
from gridbench.study.runs import create_study_run
from gridbench.web.app import WebConfig, create_app
from gridbench.web.security import CSRF_COOKIE

EX = Path(__file__).resolve().parents[2] / "examples"
SPEC = """\
name: errors-study
purpose: Which tool is easier?
tools:
  - {id: alpha, title: Alpha, tasks: [{id: t1, title: T1, instructions: Do it.}]}
  - {id: beta, title: Beta, tasks: [{id: t1, title: T1, instructions: Do it.}]}
participants: [P01, P02]
comparisons: [{a: alpha, b: beta}]
"""


def test_admin_link_post_on_a_damaged_log_is_422_not_500(tmp_path: Path) -> None:
    root = tmp_path / "results"
    spec, data = load_study_spec_text(SPEC, "spec")
    run = create_study_run(root, spec, data, delivery="browser")
    StudyDelivery.open(run.path).issue_link("P01", "admin")
    with log_path(run.path).open("a") as fh:  # a hand edit gone wrong, before the server starts
        fh.write('{"type": "sus", "t_ns": 1, "participant": "P01", "tool": "alpha"}\n')
    app = create_app(WebConfig(root))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as admin:
        admin.get(f"/studies/{run.path.name}")  # any page sets the CSRF cookie
        token = admin.cookies.get(CSRF_COOKIE)
        assert token
        for action in ("issue", "revoke"):
            r = admin.post(
                f"/studies/{run.path.name}/links/P01",
                data={"csrf": token, "action": action},
                follow_redirects=False,
            )
            assert r.status_code == 422, (action, r.status_code, r.text[-500:])
            assert "study.jsonl" in r.text and "Traceback" not in r.text


def test_an_effect_too_small_to_plan_for_prints_no_solver_warning() -> None:
    # a fresh interpreter: statsmodels installs its "always" warning filter on first import
    code = (
        "from gridbench.study import stats\n"
        "print(stats.n_required(1e-300, 0.05, 0.8, 1), stats.n_required(1e-300, 0.05, 0.8, 2))\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["None", "None"]
    assert done.stderr == ""  # no ConvergenceWarning in the middle of a report


def _power(**over: object) -> dict[str, object]:
    power: dict[str, object] = {
        "alpha": 0.05,
        "power": 0.8,
        "tails": 1,
        "effect_size": 1e-300,
        "effect_from": "stated",
        "n_required": None,
        "n_have": 8,
        "enough": None,
        "seed_effect_for_27": 0.4915,
        "seed_effect_range": [0.4915, 0.5014],
        "seed_n": 27,
    }
    return {"power": {**power, **over}}


def test_a_stated_effect_without_a_cohort_is_not_called_none_stated() -> None:
    st = power_statements(_power())
    assert st is not None
    first = st.lines[0]
    assert first[0] == "warn"
    assert "too small to plan for" in first[1] and "stated in the spec" in first[1]
    assert "none stated" not in first[1]
    st = power_statements(_power(effect_size=None, effect_from="none"))
    assert st is not None
    assert st.lines[0] == ("info", "No effect size to plan with: none stated, none observed.")


def test_a_made_up_run_name_in_a_link_scans_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "results"
    spec, data = load_study_spec_text(SPEC, "spec")
    run = create_study_run(root, spec, data, delivery="browser")
    secret = StudyDelivery.open(run.path).issue_link("P02", "admin")

    def scan(_: Path) -> list[dict[str, object]]:
        raise AssertionError("a public page read every run's experiment.json")

    monkeypatch.setattr(catalogue, "list_runs", scan)
    app = create_app(WebConfig(root))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        assert c.get(f"/p/{run.path.name}/{secret}").status_code == 200  # its exact name
        for rid in ("no-such-run", run.path.name[:12]):  # made up; a prefix of the real one
            r = c.get(f"/p/{rid}/{secret}")
            assert r.status_code == 404, (rid, r.status_code)


def test_a_link_issued_on_the_admin_page_names_the_run_folder(tmp_path: Path) -> None:
    root = tmp_path / "results"
    spec, data = load_study_spec_text(SPEC, "spec")
    run = create_study_run(root, spec, data, delivery="browser")
    prefix = run.path.name[:12]  # the admin pages find a run by a unique prefix, as the CLI
    app = create_app(WebConfig(root))
    with TestClient(app, base_url="http://127.0.0.1") as admin:
        admin.get(f"/studies/{prefix}")
        form = {"csrf": admin.cookies.get(CSRF_COOKIE) or "", "action": "issue"}
        page = admin.post(f"/studies/{prefix}/links/P01", data=form).text
        link = re.search(r"http://127\.0\.0\.1(/p/[^\"<\s]+)", page)
        assert link, page[-1500:]
        assert link.group(1).startswith(f"/p/{run.path.name}/")  # links find runs by name
        assert admin.get(link.group(1)).status_code == 200


def test_a_choice_offered_twice_and_a_header_read_twice_are_refused() -> None:
    ahe = (EX / "study-ahe.yaml").read_text(encoding="utf-8")
    twice = ahe.replace("choices: [undergraduate, postgraduate, staff]", "choices: [staff, staff]")
    with pytest.raises(SpecError, match="question 'level' offers 'staff' twice"):
        load_study_spec_text(twice, "ahe.yaml")
    imp = (EX / "study-import.yaml").read_text(encoding="utf-8")
    both = imp.replace("    tool: Tool\n", "    tool: Participant\n")
    with pytest.raises(
        SpecError, match=r"columns 'participant' and 'tool' both read .*'Participant'"
    ):
        load_study_spec_text(both, "import.yaml")
