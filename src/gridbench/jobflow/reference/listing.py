"""Apache-style HTML directory listings for the published monitoring reports."""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape

from gridbench.jobflow.reference.reports import ReportFile


def _page(title: str, rows: Iterable[str]) -> str:
    t = escape(title)
    body = "\n".join(rows)
    return (
        '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">\n'
        f"<html>\n<head>\n<title>{t}</title>\n</head>\n<body>\n<h1>{t}</h1>\n"
        "<pre>Name                    Last modified (GMT)  Size\n<hr>"
        '<a href="../">Parent Directory</a>\n'
        f"{body}\n<hr></pre>\n</body>\n</html>\n"
    )


def tiers_page(tiers: Iterable[str]) -> str:
    """The listing of ``/reports/``: one sub-directory per tier."""
    return _page("Index of /reports", (f'<a href="{escape(t)}/">{escape(t)}/</a>' for t in tiers))


def files_page(tier: str, files: Iterable[ReportFile]) -> str:
    """The listing of ``/reports/<tier>/``: the published report files."""

    def row(f: ReportFile) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(f.closed_ns // 1_000_000_000))
        name = escape(f.name)
        return f'<a href="{name}">{name}</a>{" " * max(1, 24 - len(f.name))}{stamp}  {f.size}'

    return _page(f"Index of /reports/{tier}", (row(f) for f in files))
