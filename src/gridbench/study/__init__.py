"""Usability studies as a benchmark family: deliver a study in the browser, import survey
exports, score SUS, Likert and task data, and compare tools with paired tests
(docs/study.md)."""
