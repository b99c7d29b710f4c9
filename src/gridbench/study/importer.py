"""``gridbench study import``: a survey tool's CSV export -> study records (docs/study.md).

The documented generic layout is one row per participant and tool: ``participant``,
``tool``, ``sus1`` .. ``sus10`` and, per task, any of ``<task>_time_s``,
``<task>_success``, ``<task>_difficulty``, ``<task>_satisfaction``, ``<task>_failure``.
The spec's ``import:`` block renames an export's headers onto these names, lists the
columns exported on a flipped 1..5 scale, and sets the delimiter.

The file is foreign input: every problem (a value out of range, a missing SUS item, an
unknown tool, a duplicate row, a response that looks answered on a flipped scale ...) is
collected with its CSV row (the header is row 1) and column, and all of them are reported
together in one :class:`ImportProblems`; nothing is silently accepted. Pure apart from
reading the file; the caller appends the records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from gridbench.errors import SpecError
from gridbench.study.csvin import CellReader, CsvTable, Problems, read_csv
from gridbench.study.csvin import ImportProblems as ImportProblems  # re-exported
from gridbench.study.install_import import import_survey
from gridbench.study.model import StudySpec
from gridbench.study.records import (
    LikertAnswer,
    Observation,
    Record,
    SusAnswer,
    TaskTime,
    now_ns,
)

SUS_COLUMNS = tuple(f"sus{i}" for i in range(1, 11))
TASK_FIELDS = ("time_s", "success", "difficulty", "satisfaction", "failure")
MAX_TASK_S = 7 * 24 * 3600.0  # a task's time past a week is a wrong column or unit
#: columns on a 1..5 scale: the only ones ``import.reversed`` may flip
_SCALED_FIELDS = ("difficulty", "satisfaction", "failure")
_SUCCESS = {"1": True, "0": False, "true": True, "false": False, "yes": True, "no": False}
#: mean(odd items) - mean(even items) at or below this looks answered on a flipped scale
#: (the positive odd items low, the negative even items high: a SUS of 25 or less)
REVERSED_GAP = -2.0
SUS_FIX = (
    "add sus1..sus10 to import.reversed if the export flipped the scale, or check the row "
    "(--accept-low-sus keeps rows that truly rate the tool this low)"
)


@dataclass(frozen=True)
class ImportResult:
    """What an import produced: the records to append, and what was noticed but kept."""

    records: tuple[Record, ...]
    warnings: tuple[str, ...]
    participants: tuple[str, ...]
    rows: int


def _generic_names(spec: StudySpec) -> set[str]:
    tasks = {t.id for tool in spec.tools for t in tool.tasks}
    names = {"participant", "tool", *SUS_COLUMNS}
    names |= {f"{task}_{field}" for task in tasks for field in TASK_FIELDS}
    if spec.install_survey is not None:
        names |= {"release", "respondent", "complaint", *spec.install_survey.items}
    return names


def check_mapping(spec: StudySpec) -> None:
    """The spec's ``import:`` block names only columns of the generic layout (SpecError)."""
    known = _generic_names(spec)
    mapping = spec.import_
    for key in mapping.columns:
        if key not in known:
            raise SpecError(
                f"import.columns maps {key!r}, which is not a column of the generic layout",
                where=f"import.columns.{key}",
                fix="map participant, tool, sus1..sus10 or <task>_time_s|success|difficulty|"
                "satisfaction|failure of a task in the spec (docs/study.md)",
            )
    for col in mapping.reversed:
        field = col.rsplit("_", 1)[-1] if "_" in col else ""
        if col not in known or not (col in SUS_COLUMNS or field in _SCALED_FIELDS):
            raise SpecError(
                f"import.reversed lists {col!r}, which is not a 1..5 column",
                where="import.reversed",
                fix="list sus1..sus10 or <task>_difficulty|satisfaction|failure columns",
            )


def _task_columns(
    spec: StudySpec, table: CsvTable, problems: Problems, warnings: list[str]
) -> list[tuple[str, str]]:
    """(task, field) of every per-task column in the file; an unknown task is a problem,
    a column of no known shape is left out with a warning."""
    tasks = {t.id for tool in spec.tools for t in tool.tasks}
    found = []
    for col in table.columns:
        if col in ("participant", "tool", *SUS_COLUMNS):
            continue
        field = next((f for f in TASK_FIELDS if col.endswith(f"_{f}")), None)
        task = col.removesuffix(f"_{field}") if field else ""
        if field is None or not task:
            warnings.append(f"column {table.label(col)} is not part of the layout: left out")
        elif task not in tasks:
            problems.add(
                1,
                table.label(col),
                f"unknown task {task!r} (the spec has {', '.join(sorted(tasks))})",
            )
        else:
            found.append((task, field))
    return found


def import_responses(
    spec: StudySpec,
    csv_path: Path,
    *,
    survey_csv: Path | None = None,
    accept_low_sus: bool = False,
) -> ImportResult:
    """Read a responses CSV (and an install-survey CSV) against ``spec``; every problem is
    collected and raised together as :class:`ImportProblems`."""
    check_mapping(spec)
    table = read_csv(csv_path, spec.import_.delimiter, spec.import_.columns)
    problems = Problems(str(csv_path))
    for col in ("participant", "tool"):
        if col not in table.columns:
            problems.add(1, table.label(col), "required column missing")
    sus_cols = [c for c in SUS_COLUMNS if c in table.columns]
    if sus_cols and len(sus_cols) < 10:
        missing = ", ".join(table.label(c) for c in SUS_COLUMNS if c not in table.columns)
        problems.add(1, missing, "SUS columns missing (a SUS response has ten items)")
    elif not sus_cols and spec.questionnaires.sus:
        problems.add(
            1, "sus1..sus10", "no SUS columns, though the spec's questionnaires.sus is true"
        )
    warnings: list[str] = []
    task_cols = _task_columns(spec, table, problems, warnings)
    problems.raise_if_any()  # the rows cannot be read against a header this wrong

    reader = CellReader(table, problems, spec.import_.reversed)
    t = now_ns()
    records: list[Record] = []
    seen: dict[tuple[str, str], int] = {}
    people: list[str] = []
    tools_of: dict[str, set[str]] = {}
    tool_ids = [tl.id for tl in spec.tools]
    for row, cells in table.rows:
        who = reader.ident(row, cells, "participant", spec.participants)
        tool = reader.ident(row, cells, "tool", tool_ids)
        if who and tool:
            first = seen.setdefault((who, tool), row)
            if first != row:
                problems.add(
                    row,
                    table.label("participant"),
                    f"a second row for participant {who!r} and tool {tool!r} (first: row {first})",
                )
        if who and who not in people:
            people.append(who)
        if who and tool:
            tools_of.setdefault(who, set()).add(tool)
        read = _Row(reader, row, cells, who, tool, t)
        if len(sus_cols) == 10:
            records += _sus(read, accept_low_sus, warnings)
        tasks = {tk.id for tk in spec.tool(tool).tasks} if tool else set()
        by_task: dict[str, dict[str, str]] = {}
        for task, field in task_cols:
            col = f"{task}_{field}"
            if tool and task not in tasks:
                if cells.get(col, ""):
                    problems.add(row, table.label(col), f"tool {tool!r} has no task {task!r}")
                continue
            by_task.setdefault(task, {})[field] = col
        if who and tool:
            for task, cols in by_task.items():
                records += _task(read, task, cols)
    problems.raise_if_any()
    for who in spec.participants:
        if who not in people:
            warnings.append(f"participant {who} has no rows in {csv_path.name}")
    for who in people:
        absent = [tl for tl in tool_ids if tl not in tools_of.get(who, set())]
        if absent:
            # a paired comparison leaves this participant out where a tool is missing
            warnings.append(f"participant {who} has no row for {', '.join(absent)}")
    if survey_csv is not None:
        records += import_survey(spec, survey_csv, t)
    return ImportResult(tuple(records), tuple(warnings), tuple(people), len(table.rows))


@dataclass(frozen=True, slots=True)
class _Row:
    """One response row being read: its reader, number and cells, and whose answers it
    holds (``who``/``tool`` are '' when the row names no valid one)."""

    reader: CellReader
    row: int
    cells: dict[str, str]
    who: str
    tool: str
    t: int  # the records' t_ns


def _sus(read: _Row, accept_low: bool, warnings: list[str]) -> list[Record]:
    reader, row, cells, who, tool = read.reader, read.row, read.cells, read.who, read.tool
    if not any(cells.get(c, "") for c in SUS_COLUMNS):
        warnings.append(f"row {row}: no SUS answer")
        return []
    items = [reader.scale(row, cells, c) for c in SUS_COLUMNS]
    blank = [reader.table.label(c) for c in SUS_COLUMNS if not cells.get(c, "")]
    if blank:
        reader.problems.add(
            row, ", ".join(blank), "SUS item missing (a SUS response needs all ten items)"
        )
    answers = [i for i in items if i is not None]
    if len(answers) < 10 or not who or not tool:
        return []
    gap = sum(answers[0::2]) / 5 - sum(answers[1::2]) / 5
    if gap <= REVERSED_GAP:
        text = (
            f"the SUS answers look given on a flipped scale (odd items average "
            f"{sum(answers[0::2]) / 5:g}, even items {sum(answers[1::2]) / 5:g})"
        )
        if not accept_low:
            reader.problems.add(row, "sus1..sus10", f"{text}; fix: {SUS_FIX}")
            return []
        warnings.append(f"row {row}: {text}; kept (--accept-low-sus)")
    return [SusAnswer(t_ns=read.t, source="import", participant=who, tool=tool, items=answers)]


def _task(read: _Row, task: str, cols: dict[str, str]) -> list[Record]:
    reader, row, cells = read.reader, read.row, read.cells
    out: list[Record] = []
    label = reader.table.label
    key: dict[str, object] = {
        "t_ns": read.t,
        "source": "import",
        "participant": read.who,
        "tool": read.tool,
        "task": task,
    }
    if "time_s" in cols and (text := cells.get(cols["time_s"], "")):
        try:
            seconds = float(text)
        except ValueError:
            seconds = math.nan
        if not 0 <= seconds <= MAX_TASK_S:  # NaN too
            reader.problems.add(
                row,
                label(cols["time_s"]),
                f"{text!r} is not a time in seconds (0 to {MAX_TASK_S:,.0f}: a week)",
            )
        else:
            out.append(TaskTime.model_validate({**key, "seconds": seconds}))
    success: bool | None = None
    if "success" in cols and (text := cells.get(cols["success"], "")):
        success = _SUCCESS.get(text.strip().lower())
        if success is None:
            reader.problems.add(
                row,
                label(cols["success"]),
                f"{text!r} is not a success value (1, 0, true, false, yes, no)",
            )
    failure = reader.scale(row, cells, cols["failure"]) if "failure" in cols else None
    if failure is not None and success is None and not cells.get(cols.get("success", ""), ""):
        reader.problems.add(
            row,
            label(cols["failure"]),
            f"a failure rating without {task}_success in the same row (add the column: 1 or 0)",
        )
    elif success is not None:
        out.append(Observation.model_validate({**key, "success": success, "failure": failure}))
    difficulty = reader.scale(row, cells, cols["difficulty"]) if "difficulty" in cols else None
    satisfaction = (
        reader.scale(row, cells, cols["satisfaction"]) if "satisfaction" in cols else None
    )
    if difficulty is not None or satisfaction is not None:
        out.append(
            LikertAnswer.model_validate(
                {**key, "difficulty": difficulty, "satisfaction": satisfaction}
            )
        )
    return out
