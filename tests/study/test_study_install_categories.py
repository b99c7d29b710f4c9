"""The install survey's categories averaged per release and per release group (000 Fig.
3.2, 3.3), from the example's real import through the CLI, checked against the CSV read
here independently; and a category or group naming what the survey lacks is one error."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.errors import SpecError
from gridbench.study.load import load_study_spec, load_study_spec_text

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "study-import.yaml"


def _by_hand(items: list[str], releases: list[str]) -> float:
    rows = list(csv.DictReader((ROOT / "examples" / "study-install.csv").open(), delimiter=";"))
    values = [int(r[i]) for r in rows if r["release"] in releases for i in items if r[i]]
    return sum(values) / len(values)


def test_each_category_is_its_items_averaged_per_release_and_per_group(tmp_path: Path) -> None:
    survey = load_study_spec(SPEC)[0].install_survey
    assert survey is not None and survey.categories and survey.release_groups
    r = subprocess.run(
        [str(BIN), "study", "import", str(SPEC), "--responses",
         str(ROOT / "examples" / "study-export.csv"), "--survey",
         str(ROOT / "examples" / "study-install.csv")],
        env=cli_env(tmp_path), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    run = next(tmp_path.glob("*-workbench-import"))
    cats = json.loads((run / "metrics.json").read_text())["install_survey"]["categories"]
    assert {c["category"] for c in cats} == set(survey.categories)
    for c in cats:
        members = survey.categories[c["category"]]
        for group, rels in survey.release_groups.items():
            assert c["groups"][group]["mean"] == pytest.approx(_by_hand(members, rels))
            assert c["groups"][group]["releases"] == rels
        for rel in survey.releases:
            assert c["releases"][rel]["mean"] == pytest.approx(_by_hand(members, [rel]))
    report = (run / "report.html").read_text()
    assert "mean rating per category and release group" in report
    assert "mean rating per category and release (" in report


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ("categories: {setup: [instalation]}",
         "category 'setup' names 'instalation', which is not among items; did you mean "
         "'installation'?"),
        ("release_groups: {old: ['1.0', '2.O']}",
         "release group 'old' names '2.O', which is not among releases; did you mean '2.0'?"),
        ("categories: {setup: []}", "category 'setup' names no item"),
    ],
)  # fmt: skip
def test_a_category_or_group_naming_what_the_survey_lacks_is_one_error(
    block: str, said: str
) -> None:
    text = SPEC.read_text()
    start = text.index("  # the seed's Fig. 3.2")
    end = text.index("\n", text.index("latest two:"))
    bad = text[:start] + f"  {block}\n" + text[end + 1 :]
    with pytest.raises(SpecError) as err:
        load_study_spec_text(bad, "study.yaml")
    assert said in str(err.value)
