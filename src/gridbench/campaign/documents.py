"""The IEEE 829 documents of a campaign, from its folder and its units' runs: the test
plan, a test design per component, a test case per unit, the test log, the incident
reports and the test summary (with the comparison against the previous campaign and the
trend), each as self-contained HTML and as Markdown, under ``CAMPAIGN/docs/``, with an
index and ``summary.json`` (what the dashboard's campaign page and the trend read).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gridbench.campaign.case_documents import case_doc, design_doc
from gridbench.campaign.document_parts import nav
from gridbench.campaign.folder import DOCS_DIR, SUMMARY_FILE, CampaignDir
from gridbench.campaign.log_documents import incidents_doc, log_doc
from gridbench.campaign.plan_documents import index_doc, plan_doc
from gridbench.campaign.previous import trend
from gridbench.campaign.render import Document, document_html, document_md
from gridbench.campaign.summary_document import summary_doc
from gridbench.campaign.view import View, load_view
from gridbench.store.layout import write_json, write_text_atomic

SUMMARY_SCHEMA = "gridbench.campaign-summary/1"


def summary_data(v: View) -> dict[str, Any]:
    """summary.json: what the dashboard's page and the next campaign's trend read."""
    counts = v.counts()
    regressions = [
        {"unit": uc.unit, "rep": uc.rep, **ch.to_dict()}
        for uc in (v.previous.units if v.previous else [])
        for ch in uc.regressions
    ]
    return {
        "schema": SUMMARY_SCHEMA,
        "id": v.folder.id,
        "name": v.name,
        "status": v.doc.get("status"),
        "created": v.doc.get("created"),
        "finished": v.doc.get("finished"),
        "total": len(v.units),
        "counts": counts,
        "passed": counts["passed"] == len(v.units),
        "verdicts": {u.key: u.verdict for u in v.units},
        "components": [
            {
                "id": c.id,
                "title": c.title,
                "units": [
                    {
                        "key": u.key,
                        "id": u.unit.id,
                        "title": u.title,
                        "family": u.record.get("family"),
                        "verdict": u.verdict,
                        "why": u.why_not_run,
                        "runs": [
                            {
                                "rep": r.rep,
                                "attempt": r.final.name,
                                "run": r.final.run,
                                "outcome": r.outcome,
                            }
                            for r in u.reps
                            if r.final is not None
                        ],
                    }
                    for u in v.of(c)
                ],
            }
            for c in v.parsed.spec.components
        ],
        "incident_count": len(v.incidents.items),
        "incidents": [i.to_dict() for i in v.incidents.items],
        "regression_count": len(regressions),
        "regressions": regressions,
        "previous": v.previous.to_dict() if v.previous else None,
    }


def documents(v: View) -> list[Document]:
    bar = nav(v)
    docs = [index_doc(v), plan_doc(v)]
    docs += [design_doc(v, c) for c in v.parsed.spec.components]
    docs += [case_doc(v, u) for u in v.units]
    docs += [log_doc(v), incidents_doc(v), summary_doc(v)]
    return [Document(d.slug, d.title, d.ident, d.blocks, d.subtitle, bar) for d in docs]


def write_documents(folder: CampaignDir, *, compare: bool = True) -> tuple[View, Path]:
    """Every document (HTML and Markdown) and summary.json under ``CAMPAIGN/docs/``;
    returns the view and the index page."""
    v = load_view(folder, compare=compare)
    out = folder.path / DOCS_DIR
    out.mkdir(exist_ok=True)
    write_json(out / SUMMARY_FILE, summary_data(v))
    v.trend = trend(folder)  # this campaign's row from the summary just written
    keep = set()
    for d in documents(v):
        for ext, text in ((".html", document_html(d)), (".md", document_md(d))):
            write_text_atomic(out / f"{d.slug}{ext}", text)
            keep.add(f"{d.slug}{ext}")
    for p in out.iterdir():  # a unit removed from the file since: its old case goes
        if p.suffix in (".html", ".md") and p.name not in keep and p.name.startswith("case-"):
            os.unlink(p)
    return v, out / "index.html"
