"""Loading a ``study`` spec with errors that name the file, line, field and fix (the shared
loader of :mod:`gridbench.specload`, as every family uses)."""

from __future__ import annotations

from gridbench.specload import SpecLoader
from gridbench.study.model import StudySpec

LOADER = SpecLoader(
    StudySpec,
    what="a study spec",
    keys="name:, purpose:, tools:, participants:, questionnaires:, comparisons:",
    template="examples/study-ahe.yaml",
    docs="docs/study.md",
    kind="study",
)
load_study_spec_text = LOADER.load_text
load_study_spec = LOADER.load
