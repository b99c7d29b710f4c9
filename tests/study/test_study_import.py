"""``gridbench study import``: the generic CSV layout, the spec's ``import:`` mapping, and
every check of a foreign export, each reported with its CSV row and column, all together;
a bad CSV leaves no run behind."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BIN, cli_env
from gridbench.errors import GridbenchError, SpecError
from gridbench.study.csvin import MAX_CSV_BYTES, ImportProblems
from gridbench.study.importer import SUS_COLUMNS, import_responses
from gridbench.study.load import load_study_spec, load_study_spec_text
from gridbench.study.model import StudySpec
from gridbench.study.records import LikertAnswer, Observation, SusAnswer, TaskTime

EXAMPLES = Path(__file__).parents[2] / "examples"
AHE = EXAMPLES / "study-ahe.yaml"
TASK_COLS = [
    f"{t}_{f}"
    for t in ("launch", "monitor", "download")
    for f in ("time_s", "success", "difficulty", "satisfaction", "failure")
]
HEADER = ["participant", "tool", *SUS_COLUMNS, *TASK_COLS]
#: a plausible answer: odd (positive) items agree, even (negative) ones disagree; SUS 75
GOOD_SUS = [4, 2, 4, 2, 4, 2, 4, 2, 4, 2]


def ahe() -> StudySpec:
    return load_study_spec(AHE)[0]


def row(participant: str = "P01", tool: str = "ahe_cli", **cells: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"participant": participant, "tool": tool}
    out |= dict(zip(SUS_COLUMNS, GOOD_SUS, strict=True))
    for t in ("launch", "monitor", "download"):
        out |= {
            f"{t}_time_s": 100.5,
            f"{t}_success": 1,
            f"{t}_difficulty": 2,
            f"{t}_satisfaction": 4,
            f"{t}_failure": 1,
        }
    out |= cells
    return out


def write(
    path: Path, rows: list[dict[str, Any]], header: list[str] | None = None, delimiter: str = ","
) -> Path:
    header = header or HEADER
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header, delimiter=delimiter, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def problems(spec: StudySpec, path: Path, **kw: Any) -> list[tuple[int, str, str]]:
    with pytest.raises(ImportProblems) as info:
        import_responses(spec, path, **kw)
    return info.value.problems


def test_generic_layout_gives_the_records_with_the_csv_values(tmp_path: Path) -> None:
    rows = [row("P01", "ahe_cli"), row("P01", "globus_cli", launch_success="no", launch_failure=4)]
    rows[1] |= {"sus1": 3, "launch_time_s": "612.25", "launch_satisfaction": 2}
    result = import_responses(ahe(), write(tmp_path / "r.csv", rows))
    assert result.rows == 2 and result.participants == ("P01",)
    assert all(r.source == "import" for r in result.records)
    sus = [r for r in result.records if isinstance(r, SusAnswer)]
    assert [(s.tool, s.items) for s in sus] == [
        ("ahe_cli", GOOD_SUS),
        ("globus_cli", [3, *GOOD_SUS[1:]]),
    ]
    times = {(r.tool, r.task): r.seconds for r in result.records if isinstance(r, TaskTime)}
    assert times[("globus_cli", "launch")] == 612.25 and times[("ahe_cli", "monitor")] == 100.5
    obs = {(r.tool, r.task): r for r in result.records if isinstance(r, Observation)}
    assert obs[("globus_cli", "launch")].success is False
    assert obs[("globus_cli", "launch")].failure == 4
    assert obs[("ahe_cli", "launch")].success is True and obs[("ahe_cli", "launch")].failure == 1
    likert = {(r.tool, r.task): r for r in result.records if isinstance(r, LikertAnswer)}
    assert likert[("globus_cli", "launch")].satisfaction == 2
    assert likert[("globus_cli", "launch")].difficulty == 2
    assert len(result.records) == 2 * (1 + 3 * 3)
    # P02..P08 declared but absent, P01 without two tools: said, not refused
    assert "participant P02 has no rows in r.csv" in result.warnings
    assert "participant P01 has no row for unicore_gui, ahe_gui" in result.warnings


def test_the_example_responses_import_whole() -> None:
    result = import_responses(ahe(), EXAMPLES / "study-responses.csv")
    assert result.rows == 32 and len(result.participants) == 8 and result.warnings == ()
    assert sum(isinstance(r, SusAnswer) for r in result.records) == 32


@pytest.mark.parametrize(
    ("cells", "column", "text"),
    [
        ({"sus3": 6}, "sus3", "'6' is out of range (give 1..5)"),
        ({"sus3": 0}, "sus3", "'0' is out of range"),
        ({"launch_difficulty": "hard"}, "launch_difficulty", "'hard' is not a number"),
        ({"monitor_satisfaction": 3.5}, "monitor_satisfaction", "'3.5' is not a whole number"),
        ({"download_failure": 9}, "download_failure", "out of range"),
        ({"sus7": ""}, "sus7", "SUS item missing"),
        ({"tool": "ahe_web"}, "tool", "unknown tool 'ahe_web'"),
        ({"participant": "P99"}, "participant", "unknown participant 'P99'"),
        ({"participant": "9 lives"}, "participant", "is not a valid participant id"),
        ({"participant": ""}, "participant", "no participant given"),
        ({"launch_success": "maybe"}, "launch_success", "'maybe' is not a success value"),
        ({"launch_time_s": "-3"}, "launch_time_s", "is not a time in seconds"),
        ({"launch_time_s": "ten"}, "launch_time_s", "is not a time in seconds"),
        ({"launch_time_s": "nan"}, "launch_time_s", "is not a time in seconds"),
        ({"launch_time_s": "1e308"}, "launch_time_s", "(0 to 604,800: a week)"),
        ({"launch_time_s": "604801"}, "launch_time_s", "is not a time in seconds"),
        (
            {"launch_success": "", "launch_failure": 3},
            "launch_failure",
            "a failure rating without launch_success",
        ),
    ],
)
def test_each_bad_cell_is_named_by_row_and_column(
    tmp_path: Path, cells: dict[str, Any], column: str, text: str
) -> None:
    rows = [row("P01"), row("P02") | cells]
    found = problems(ahe(), write(tmp_path / "r.csv", rows))
    assert len(found) == 1, found
    r, col, problem = found[0]
    assert (r, col) == (3, column) and text in problem


def test_missing_sus_items_list_every_blank_column(tmp_path: Path) -> None:
    found = problems(ahe(), write(tmp_path / "r.csv", [row(sus2="", sus9="")]))
    assert found == [(2, "sus2, sus9", found[0][2])]
    assert "SUS item missing" in found[0][2]


def test_a_missing_sus_column_and_an_unknown_task_are_header_problems(tmp_path: Path) -> None:
    header = [c for c in HEADER if c != "sus10"] + ["upload_time_s"]
    found = problems(ahe(), write(tmp_path / "r.csv", [row(upload_time_s=5)], header))
    assert (1, "sus10", "SUS columns missing (a SUS response has ten items)") in found
    assert any(
        r == 1 and c == "upload_time_s" and "unknown task 'upload'" in p for r, c, p in found
    )
    found = problems(ahe(), write(tmp_path / "r.csv", [row()], [*HEADER, "sus2"]))
    assert found == [(1, "'sus2'", "a second column named 'sus2' (first: column 4)")]
    header = [c for c in HEADER if c != "tool"]
    found = problems(ahe(), write(tmp_path / "r.csv", [row()], header))
    assert found == [(1, "tool", "required column missing")]


def test_a_duplicate_participant_and_tool_row_names_the_first(tmp_path: Path) -> None:
    rows = [row("P01"), row("P02"), row("P01")]
    found = problems(ahe(), write(tmp_path / "r.csv", rows))
    assert found == [
        (4, "participant", "a second row for participant 'P01' and tool 'ahe_cli' (first: row 2)")
    ]


REVERSED = [2, 4, 1, 5, 2, 4, 1, 5, 2, 4]  # GOOD-ish answers given on a flipped scale


def test_a_sus_response_that_looks_reversed_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.csv",
        [row("P01"), row("P02") | dict(zip(SUS_COLUMNS, REVERSED, strict=True))],
    )
    found = problems(ahe(), path)
    assert len(found) == 1
    r, col, text = found[0]
    assert (r, col) == (3, "sus1..sus10")
    assert "look given on a flipped scale" in text
    assert "add sus1..sus10 to import.reversed if the export flipped the scale" in text
    # the same row, kept on purpose: a warning, and the answers as given
    kept = import_responses(ahe(), path, accept_low_sus=True)
    assert any("row 3" in w and "--accept-low-sus" in w for w in kept.warnings)
    sus = [r for r in kept.records if isinstance(r, SusAnswer) and r.participant == "P02"]
    assert sus[0].items == REVERSED


def with_import(block: str, base: Path = AHE) -> StudySpec:
    return load_study_spec_text(base.read_text() + "\nimport:\n" + block)[0]


def test_columns_in_import_reversed_are_flipped(tmp_path: Path) -> None:
    spec = with_import(
        "  reversed: [sus1, sus2, sus3, sus4, sus5, sus6, sus7, sus8, sus9, sus10, "
        "launch_satisfaction]\n"
    )
    path = write(
        tmp_path / "r.csv",
        [row(launch_satisfaction=1) | dict(zip(SUS_COLUMNS, REVERSED, strict=True))],
    )
    result = import_responses(spec, path)
    (sus,) = [r for r in result.records if isinstance(r, SusAnswer)]
    assert sus.items == [6 - v for v in REVERSED]
    likert = {r.task: r for r in result.records if isinstance(r, LikertAnswer)}
    assert likert["launch"].satisfaction == 5 and likert["monitor"].satisfaction == 4


def test_a_mapping_renames_the_export_headers_and_messages_name_both(tmp_path: Path) -> None:
    spec = with_import(
        '  delimiter: ";"\n  columns: {participant: "Participant ID", tool: "Tool used", '
        'sus4: "SUS Q4", launch_time_s: "Launch (s)"}\n'
    )
    header = ["Participant ID", "Tool used", *[c if c != "sus4" else "SUS Q4" for c in SUS_COLUMNS]]
    header += ["Launch (s)", "Comments"]
    rows = [
        {"Participant ID": "P01", "Tool used": "ahe_gui", "SUS Q4": 2, "Launch (s)": 31, **_sus()},
        {"Participant ID": "P02", "Tool used": "ahe_gui", "SUS Q4": 7, "Launch (s)": 40, **_sus()},
    ]
    path = write(tmp_path / "r.csv", rows, header, delimiter=";")
    found = problems(spec, path)
    assert found == [(3, "'SUS Q4' (sus4)", "'7' is out of range (give 1..5)")]
    rows[1]["SUS Q4"] = 2
    result = import_responses(spec, write(path, rows, header, delimiter=";"))
    times = [r.seconds for r in result.records if isinstance(r, TaskTime)]
    assert times == [31.0, 40.0]
    assert "column Comments is not part of the layout: left out" in result.warnings


def _sus() -> dict[str, int]:
    return {c: v for c, v in zip(SUS_COLUMNS, GOOD_SUS, strict=True) if c != "sus4"}


def test_a_mapping_naming_no_generic_column_is_a_spec_error(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", [row()])
    with pytest.raises(SpecError) as info:
        import_responses(with_import('  columns: {sus11: "SUS 11"}\n'), path)
    assert info.value.where == "import.columns.sus11"
    with pytest.raises(SpecError) as info:
        import_responses(with_import("  reversed: [launch_time_s]\n"), path)
    assert "not a 1..5 column" in info.value.message


def test_every_problem_is_collected_and_the_message_lists_twenty(tmp_path: Path) -> None:
    rows = [
        row(f"P0{i}", t, sus1=9, launch_success="?")
        for i in range(1, 8)
        for t in ("ahe_cli", "ahe_gui")
    ]
    with pytest.raises(ImportProblems) as info:
        import_responses(ahe(), write(tmp_path / "r.csv", rows))
    exc = info.value
    assert len(exc.problems) == 28  # two per row, fourteen rows
    text = str(exc)
    assert "28 problems in the CSV; nothing was imported" in text
    assert "row 2, column sus1: '9' is out of range" in text
    assert "row 2, column launch_success: '?' is not a success value" in text
    assert text.count("\n    row ") == 20 and "... and 8 more" in text
    assert exc.where == str(tmp_path / "r.csv") and exc.fix


def test_a_task_the_row_s_tool_does_not_have_is_refused(tmp_path: Path) -> None:
    text = AHE.read_text().replace(
        "    tasks: *tasks\n  - id: ahe_gui",
        "    tasks: [{id: submit, title: Submit, instructions: Go}]\n  - id: ahe_gui",
        1,
    )
    spec = load_study_spec_text(text)[0]
    assert [t.id for t in spec.tool("unicore_gui").tasks] == ["submit"]
    header = ["participant", "tool", *SUS_COLUMNS, "submit_time_s", "launch_time_s"]
    rows = [
        row("P01", "unicore_gui", submit_time_s=5, launch_time_s=""),
        row("P02", "unicore_gui", submit_time_s=5, launch_time_s=7),
        row("P02", "ahe_gui", launch_time_s=8),
    ]
    found = problems(spec, write(tmp_path / "r.csv", rows, header))
    assert found == [(3, "launch_time_s", "tool 'unicore_gui' has no task 'launch'")]


def test_encoding_bom_size_and_delimiter(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", [row()])
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert import_responses(ahe(), bom).rows == 1
    latin = tmp_path / "latin.csv"
    latin.write_bytes(path.read_bytes() + b"P02,ahe_cli,caf\xe9\n")
    with pytest.raises(GridbenchError) as info:
        import_responses(ahe(), latin)
    assert "not UTF-8" in info.value.message and info.value.where == f"{latin}: line 3"
    semi = write(tmp_path / "semi.csv", [row()], delimiter=";")
    with pytest.raises(GridbenchError) as info:
        import_responses(ahe(), semi)
    assert "seems separated by ';'" in info.value.message
    assert "import.delimiter" in (info.value.fix or "")
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:
        fh.truncate(MAX_CSV_BYTES + 1)
    with pytest.raises(GridbenchError, match="larger than"):
        import_responses(ahe(), big)
    with pytest.raises(GridbenchError, match="file not found"):
        import_responses(ahe(), tmp_path / "absent.csv")


def test_quotes_blank_lines_and_huge_cells(tmp_path: Path) -> None:
    """An unclosed quote is named with its line, not the rest of the file read as one
    cell; blank lines above the header are skipped (rows keep their file numbers); a
    cell of 100,000 characters is cut in the message, its length said."""
    good = write(tmp_path / "r.csv", [row("P01"), row("P02")]).read_text(encoding="utf-8")
    lines = good.splitlines(keepends=True)
    unclosed = tmp_path / "unclosed.csv"
    unclosed.write_text(lines[0] + lines[1] + '"P03' + lines[2][3:], encoding="utf-8")
    with pytest.raises(GridbenchError) as info:
        import_responses(ahe(), unclosed)
    assert "a quoted cell is never closed" in info.value.message
    assert info.value.where == f"{unclosed}: line 3"
    # a quote opening in the first row, below two blank lines: its own line, not the header's
    unclosed.write_text("\n\n" + lines[0] + '"P01' + lines[1][3:], encoding="utf-8")
    with pytest.raises(GridbenchError) as info:
        import_responses(ahe(), unclosed)
    assert info.value.where == f"{unclosed}: line 4"
    blank = tmp_path / "blank.csv"
    blank.write_text("\n,,\n" + good, encoding="utf-8")
    assert import_responses(ahe(), blank).rows == 2
    found = problems(ahe(), write(tmp_path / "b2.csv", [row("P01"), row("P02", sus3=9)]))
    blank.write_text("\n\n" + (tmp_path / "b2.csv").read_text(encoding="utf-8"))
    assert [r for r, _, _ in problems(ahe(), blank)] == [r + 2 for r, _, _ in found]
    huge = write(tmp_path / "huge.csv", [row("P01", launch_time_s="9" * 100_000)])
    with pytest.raises(ImportProblems) as many:
        import_responses(ahe(), huge)
    text = str(many.value)
    assert len(text) < 1_000 and "characters in all)" in text, text


SURVEY_SPEC = """
install_survey:
  items: [installation, documentation]
  releases: ["1.0", "2.0"]
  scale: 6
"""


def test_the_install_survey(tmp_path: Path) -> None:
    spec = load_study_spec_text(AHE.read_text() + SURVEY_SPEC)[0]
    responses = write(tmp_path / "r.csv", [row()])
    header = ["release", "respondent", "installation", "documentation", "complaint"]
    rows = [
        {
            "release": "1.0",
            "respondent": "R1",
            "installation": 2,
            "documentation": 3,
            "complaint": "slow",
        },
        {
            "release": "2.0",
            "respondent": "R1",
            "installation": 6,
            "documentation": "",
            "complaint": "",
        },
    ]
    result = import_responses(spec, responses, survey_csv=write(tmp_path / "s.csv", rows, header))
    ratings = [(r.release, r.item, r.value) for r in result.records if r.type == "install_rating"]
    assert ratings == [
        ("1.0", "installation", 2),
        ("1.0", "documentation", 3),
        ("2.0", "installation", 6),
    ]
    complaints = [(r.release, r.text) for r in result.records if r.type == "complaint"]
    assert complaints == [("1.0", "slow")]
    rows += [
        {"release": "3.0", "respondent": "R1", "installation": 7, "documentation": 1},
        {"release": "2.0", "respondent": "R1", "installation": 1, "documentation": 1},
    ]
    found = problems(spec, responses, survey_csv=write(tmp_path / "s.csv", rows, header))
    assert (4, "release", "unknown release '3.0' (install_survey.releases: 1.0, 2.0)") in found
    assert (4, "installation", "'7' is out of range (give 1..6)") in found
    assert any(r == 5 and c == "respondent" and "(first: row 3)" in p for r, c, p in found)
    with pytest.raises(SpecError, match="no install_survey"):
        import_responses(ahe(), responses, survey_csv=tmp_path / "s.csv")


def flat(text: str) -> str:
    return " ".join(text.split())


def gridbench(results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=300
    )


def test_cli_bad_csv_exits_2_lists_the_problems_and_leaves_no_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    rows = [row("P01", sus2=8), row("P02", tool="nope"), row("P01")]
    path = write(tmp_path / "r.csv", rows)
    out = tmp_path / "results" / "named"
    p = gridbench(results, "study", "import", str(AHE), "--responses", str(path), "--out", str(out))
    assert p.returncode == 2, p.stderr
    err = " ".join(p.stderr.split())
    assert "3 problems in the CSV; nothing was imported" in err
    assert "row 2, column sus2: '8' is out of range (give 1..5)" in err
    assert "row 3, column tool: unknown tool 'nope'" in err
    assert "row 4, column participant: a second row for participant 'P01'" in err
    assert "Traceback" not in p.stderr
    assert not out.exists() and not (results.exists() and any(results.iterdir()))
    p = gridbench(results, "study", "import", str(AHE), "--responses", str(tmp_path / "no.csv"))
    assert p.returncode == 2 and "file not found" in p.stderr
    assert not (results.exists() and any(results.iterdir()))


def test_cli_out_names_the_run_folder_and_refuses_a_full_one(tmp_path: Path) -> None:
    results = tmp_path / "results"
    out = results / "ahe-2009"
    csv_path = str(EXAMPLES / "study-responses.csv")
    p = gridbench(results, "study", "import", str(AHE), "--responses", csv_path, "--out", str(out))
    assert (out / "study.jsonl").is_file() and (out / "experiment.json").is_file(), p.stderr
    assert f"into {out}" in " ".join(p.stdout.split())
    p = gridbench(results, "study", "import", str(AHE), "--responses", csv_path, "--out", str(out))
    assert p.returncode == 2 and "already exists and is not empty" in p.stderr
    blocked = out / "study.jsonl" / "run"  # below a file: no folder can be made there
    p = gridbench(
        results, "study", "import", str(AHE), "--responses", csv_path, "--out", str(blocked)
    )
    assert p.returncode == 2 and "cannot create the run folder" in flat(p.stderr)
    assert "Traceback" not in p.stderr


CELL = st.one_of(
    st.sampled_from(["", "1", "3", "5", "6", "0", "-1", "2.5", "nan", "inf", "yes", "P01"]),
    st.sampled_from(["ahe_cli", "globus_cli", "P02", "x" * 300, "1e999", "\u202e", '"', ";"]),
    st.text(max_size=8),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.lists(st.sampled_from([*HEADER, "other", "", "sus1"]), min_size=0, max_size=14),
    rows=st.lists(st.lists(CELL, max_size=16), max_size=6),
)
def test_any_csv_gives_records_or_one_clear_error(
    tmp_path_factory: pytest.TempPathFactory, header: list[str], rows: list[list[str]]
) -> None:
    """Foreign input never ends in a traceback: records, or a GridbenchError naming places."""
    path = tmp_path_factory.mktemp("fuzz") / "r.csv"
    with path.open("w", newline="", encoding="utf-8", errors="surrogatepass") as fh:
        w = csv.writer(fh)
        w.writerow(["participant", "tool", *header])
        w.writerows(rows)
    try:
        result = import_responses(ahe(), path)
    except ImportProblems as exc:
        assert exc.problems and all(r >= 1 for r, _, _ in exc.problems)
    except GridbenchError as exc:
        assert exc.where
    else:
        assert all(r.source == "import" for r in result.records)
