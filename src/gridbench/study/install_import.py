"""The install/configuration survey of ``gridbench study import --survey CSV`` (the
XtreemOS survey: items rated 1..scale per release, complaints as free text), checked like
the responses: every problem with its row and column, all reported together."""

from __future__ import annotations

from pathlib import Path

from gridbench.errors import SpecError
from gridbench.study.csvin import CellReader, Problems, read_csv
from gridbench.study.model import StudySpec
from gridbench.study.records import Complaint, InstallRating, Record


def import_survey(spec: StudySpec, csv_path: Path, t: int) -> list[Record]:
    """The install/configuration survey: ``release``, ``respondent``, one column per
    ``install_survey.items`` (1..scale), optional ``complaint``."""
    survey = spec.install_survey
    if survey is None:
        raise SpecError(
            "--survey was given but the spec has no install_survey block",
            where="install_survey",
            fix="declare install_survey: {items: [...], scale: 6} (docs/study.md)",
        )
    table = read_csv(csv_path, spec.import_.delimiter, spec.import_.columns)
    problems = Problems(str(csv_path))
    for col in ("release", "respondent", *survey.items):
        if col not in table.columns:
            problems.add(1, table.label(col), "required column missing")
    problems.raise_if_any()
    reader = CellReader(table, problems)  # the survey's 1..scale is never flipped here
    out: list[Record] = []
    seen: dict[tuple[str, str], int] = {}
    for row, cells in table.rows:
        release, who = cells.get("release", ""), cells.get("respondent", "")
        for col, text in (("release", release), ("respondent", who)):
            if not text or len(text) > 100:
                problems.add(row, table.label(col), f"give a {col} (1 to 100 characters)")
        if survey.releases and release and release not in survey.releases:
            problems.add(
                row,
                table.label("release"),
                f"unknown release {release!r} "
                f"(install_survey.releases: {', '.join(survey.releases)})",
            )
        if not release or not who:
            continue
        first = seen.setdefault((release, who), row)
        if first != row:
            problems.add(
                row,
                table.label("respondent"),
                f"a second row for {who!r} in {release!r} (first: row {first})",
            )
        for item in survey.items:
            value = reader.scale(row, cells, item, high=survey.scale)
            if value is not None:
                out.append(
                    InstallRating(
                        t_ns=t,
                        source="import",
                        release=release,
                        respondent=who,
                        item=item,
                        value=value,
                    )
                )
        text = cells.get("complaint", "")
        if len(text) > 20_000:
            problems.add(row, table.label("complaint"), "longer than 20000 characters")
        elif text:
            out.append(Complaint(t_ns=t, source="import", release=release, text=text))
    problems.raise_if_any()
    return out
