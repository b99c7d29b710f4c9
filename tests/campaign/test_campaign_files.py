"""Bad campaign files: one error each, naming the file and line and the fix; the state
replayed from a damaged log; documents safe with hostile text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from campaign_helpers import gb, jobflow_spec
from gridbench.campaign.folder import CampaignDir, replay
from gridbench.campaign.model import load_campaign, resolve_units
from gridbench.campaign.render import (
    Badge,
    Code,
    Document,
    Grid,
    Heading,
    Link,
    Para,
    document_html,
    document_md,
)
from gridbench.errors import SpecError

GOOD = """\
name: files
components:
  - id: aem
    units:
      - id: flow
        spec: jobflow.yaml
      - id: again
        spec: jobflow.yaml
        set: [name=again]
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


BAD = {
    "unknown family": (
        GOOD.replace(
            "        spec: jobflow.yaml\n      - id: again",
            "        spec: jobflow.yaml\n        family: quantum\n      - id: again",
        ),
        "family: quantum",
        "unknown benchmark family 'quantum'",
        "the installed families are",
    ),
    "missing spec": (
        GOOD.replace("      - id: again\n        spec: jobflow.yaml\n", "      - id: again\n"),
        "- id: again",
        "field 'components.0.units.1.spec'",
        "add this field",
    ),
    "spec file not found": (
        GOOD.replace(
            "      - id: again\n        spec: jobflow.yaml",
            "      - id: again\n        spec: nowhere.yaml",
        ),
        "spec: nowhere.yaml",
        "spec file 'nowhere.yaml' not found",
        "relative to the campaign file",
    ),
    "another campaign's unit": (
        GOOD.replace(
            "        set: [name=again]",
            "        set: [name=again]\n        after: [xtreemos-quick/aem.flow]",
        ),
        "after: [xtreemos-quick/aem.flow]",
        "names a unit of another campaign",
        "name an earlier unit of this campaign as component.unit (one of: aem.flow)",
    ),
    "a unit that comes later": (
        GOOD.replace(
            "        spec: jobflow.yaml\n      - id: again",
            "        spec: jobflow.yaml\n        after: [again]\n      - id: again",
        ),
        "after: [again]",
        "names a unit that comes later in the file",
        "this is the first unit",
    ),
    "a misspelt key": (
        GOOD.replace("set: [name=again]", "sets: [name=again]"),
        "sets: [name=again]",
        "did you mean 'set'?",
        "remove it, or check its spelling",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_campaign_file_is_one_error_with_its_line_and_fix(tmp_path: Path, case: str) -> None:
    text, at, message, fix = BAD[case]
    jobflow_spec(tmp_path)
    camp = tmp_path / "c.yaml"
    camp.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as exc:
        resolve_units(load_campaign(camp))
    said = str(exc.value)
    assert said.count("\n") == 0 or said.count(str(camp)) == 1, said  # one error
    assert f"{camp}:{_line(text, at)}" in said, said
    assert message in said and fix in said, said


def test_the_command_says_it_with_exit_code_2(tmp_path: Path) -> None:
    text, at, message, _fix = BAD["unknown family"]
    jobflow_spec(tmp_path)
    camp = tmp_path / "c.yaml"
    camp.write_text(text, encoding="utf-8")
    for argv in (("campaign", "validate", str(camp)), ("validate", str(camp))):
        p = gb(tmp_path / "results", *argv)
        assert p.returncode == 2, p.stdout + p.stderr
        assert f"{camp}:{_line(text, at)}" in p.stderr and message in p.stderr
        assert "Traceback" not in p.stderr


def test_a_spec_its_family_refuses_names_the_unit_and_the_spec_line(tmp_path: Path) -> None:
    spec = jobflow_spec(tmp_path)
    spec.write_text(spec.read_text().replace("trials: 1", "trials: 1\nwarmpu: 0.1"))
    camp = tmp_path / "c.yaml"
    camp.write_text(GOOD, encoding="utf-8")
    p = gb(tmp_path / "results", "campaign", "validate", str(camp))
    assert p.returncode == 2, p.stdout + p.stderr
    err = " ".join(p.stderr.split())
    assert f"{camp}:{_line(GOOD, '- id: flow')}: unit aem.flow" in err, err
    assert f"{spec}:" in err and "warmpu" in err and "did you mean 'warmup'" in err, err
    run = gb(tmp_path / "results", "campaign", "run", str(camp))  # refused before anything
    assert run.returncode == 2, run.stdout + run.stderr
    assert "did you mean 'warmup'" in run.stderr
    assert not (tmp_path / "results" / "campaigns").exists()  # no campaign folder made


def test_the_log_is_replayed_whatever_it_holds(tmp_path: Path) -> None:
    folder = CampaignDir.create(tmp_path, "x")
    folder.log("begin", pid=1)
    folder.log("start", unit="a.b", rep=1, attempt=1, pid=2)
    folder.log("end", unit="a.b", rep=1, attempt=1, exit=0, outcome="passed", run="r1")
    folder.log("start", unit="a.c", rep=1, attempt=1)
    folder.log("end", unit="zz", rep="x", attempt=1)  # foreign: skipped
    with open(folder.log_file, "a") as fh:
        fh.write('{"event": "end", "unit": "a.c", "rep": 1, "att')  # a torn last line
    st = replay(folder.events())
    assert st.is_done("a.b", 1) and not st.is_done("a.c", 1)
    assert [a.name for a in st.open_attempts()] == ["a.c.r1.a1"]
    assert st.final("a.b", 1).run == "r1"  # type: ignore[union-attr]


def test_documents_escape_hostile_text() -> None:
    evil = "<script>alert(1)</script> | **x** [y](javascript:z) `c`"
    doc = Document(
        "index",
        evil,
        "C-1",
        (
            Heading(evil, 2, "h"),
            Para.of(Badge("failed"), f" {evil}"),
            Grid(("a|b", "c"), ((Link(evil, "x.html"), Code(evil)),)),
        ),
        nav=(("Campaign", "index"),),
    )
    html = document_html(doc)
    assert "<script>" not in html and "&lt;script&gt;" in html
    md = document_md(doc)
    outside_code = re.sub(r"`[^`]*`", "", md)  # a code span shows its text as it is
    assert "<script>" not in outside_code and "\\|" in md and "\\[y\\]" in md
    for line in md.splitlines():
        if line.startswith("| [") or line.startswith("| a"):
            assert line.count(" | ") == 1, line  # two cells, whatever the text held


def test_a_campaign_file_that_changed_cannot_resume_its_unfinished_campaign(
    tmp_path: Path,
) -> None:
    from gridbench.campaign.run_plan import Plan
    from gridbench.campaign.runner import CampaignRunner

    jobflow_spec(tmp_path)
    camp = tmp_path / "c.yaml"
    camp.write_text(GOOD, encoding="utf-8")
    parsed = load_campaign(camp)
    units = resolve_units(parsed)
    root = tmp_path / "results"
    folder = CampaignDir.create(root, "files")
    folder.write_copy(GOOD)
    folder.write_state({"name": "files", "status": "interrupted", "digest": "0" * 16})
    runner = CampaignRunner(parsed, Plan(units, {}), root)
    with pytest.raises(SpecError) as exc:
        runner.open()
    assert "changed since campaign" in str(exc.value) and "--new" in str(exc.value)
    runner = CampaignRunner(parsed, Plan(units, {}), root, new=True)
    assert runner.open().path != folder.path
    assert json.loads((folder.path / "campaign.json").read_text())["status"] == "interrupted"
