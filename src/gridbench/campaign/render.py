"""The campaign's documents as data (headings, paragraphs, lists, tables with links and
verdict badges, code) and their two renderings: a self-contained HTML page (the report
pages' style and Content-Security-Policy: no script, no fetch; every text escaped) and
Markdown (every cell's pipes and line breaks escaped)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gridbench import __version__
from gridbench.report.html import CSP, STYLE

#: verdict words -> the badge class of the report pages' style
TONE = {
    "passed": "pass",
    "pass": "pass",
    "complete": "pass",
    "failed": "fail",
    "error": "fail",
    "timeout": "fail",
    "critical": "fail",
    "major": "fail",
    "regressed": "fail",
    "suspended": "warn",
    "interrupted": "warn",
    "killed": "warn",
    "minor": "warn",
    "not run": "info",
    "running": "info",
    "improved": "pass",
}


@dataclass(frozen=True)
class Link:
    text: str
    href: str


@dataclass(frozen=True)
class Badge:
    text: str


@dataclass(frozen=True)
class Code:
    text: str


Cell = str | Link | Badge | Code | tuple["Cell", ...]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2
    id: str = ""


@dataclass(frozen=True)
class Para:
    parts: tuple[Cell, ...]

    @classmethod
    def of(cls, *parts: Cell) -> Para:
        return cls(tuple(parts))


@dataclass(frozen=True)
class Items:
    items: tuple[Cell, ...]


@dataclass(frozen=True)
class Pairs:
    rows: tuple[tuple[str, Cell], ...]


@dataclass(frozen=True)
class Grid:
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    empty: str = "none"
    id: str = ""


@dataclass(frozen=True)
class Pre:
    text: str


Block = Heading | Para | Items | Pairs | Grid | Pre


@dataclass(frozen=True)
class Document:
    """One document: its file stem, title, identifier and blocks."""

    slug: str
    title: str
    ident: str
    blocks: tuple[Block, ...]
    subtitle: str = ""
    nav: tuple[tuple[str, str], ...] = field(default=())  # (label, slug) of every document


# -- HTML ---------------------------------------------------------------------------------


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def cell_html(c: Cell) -> str:
    if isinstance(c, Link):
        return f'<a href="{_e(c.href)}">{_e(c.text)}</a>'
    if isinstance(c, Badge):
        return f'<span class="badge {TONE.get(c.text.split(" ")[0], "info")}">{_e(c.text)}</span>'
    if isinstance(c, Code):
        return f"<code>{_e(c.text)}</code>"
    if isinstance(c, tuple):
        return "".join(cell_html(x) for x in c)
    return _e(c)


def block_html(b: Block) -> str:
    if isinstance(b, Heading):
        level = min(max(b.level, 2), 4)
        ident = f' id="{_e(b.id)}"' if b.id else ""
        return f"<h{level}{ident}>{_e(b.text)}</h{level}>"
    if isinstance(b, Para):
        return f"<p>{''.join(cell_html(p) for p in b.parts)}</p>"
    if isinstance(b, Items):
        if not b.items:
            return '<p class="note">none</p>'
        return "<ul>" + "".join(f"<li>{cell_html(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Pairs):
        rows = "".join(f"<dt>{_e(k)}</dt><dd>{cell_html(v)}</dd>" for k, v in b.rows)
        return f"<dl>{rows}</dl>"
    if isinstance(b, Pre):
        return f'<pre class="spec">{_e(b.text)}</pre>'
    if not b.rows:
        return f'<p class="note">{_e(b.empty)}</p>'
    ident = f' id="{_e(b.id)}"' if b.id else ""
    head = "".join(f"<th>{_e(c)}</th>" for c in b.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell_html(c)}</td>" for c in row) + "</tr>" for row in b.rows
    )
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


EXTRA_STYLE = "nav a{margin-right:1em}code{background:#f6f6f6;padding:0 .2em}"


def document_html(doc: Document, *, generated: datetime | None = None) -> str:
    """The document as one self-contained page (no script, no request)."""
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(
        f'<a href="{_e(slug)}.html">{_e(label)}</a>' if slug != doc.slug else f"<b>{_e(label)}</b>"
        for label, slug in doc.nav
    )
    meta = f"{doc.ident} · gridbench {__version__} · generated {when}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(doc.title)}</title><style>{STYLE}{EXTRA_STYLE}</style></head><body>"
        f"<nav>{nav}</nav>"
        f'<header><h1>{_e(doc.title)}</h1><p class="meta">{_e(meta)}</p>'
        + (f"<p>{_e(doc.subtitle)}</p>" if doc.subtitle else "")
        + "</header>"
        + "".join(block_html(b) for b in doc.blocks)
        + f'<footer class="note">Made by gridbench {_e(__version__)} (IEEE 829 documents of a '
        "campaign). This file is self-contained and makes no network requests.</footer>"
        "</body></html>\n"
    )


# -- Markdown -----------------------------------------------------------------------------


def _md(text: object) -> str:
    """Text safe in a Markdown line or table cell (one line; a space at either end kept,
    as it separates it from the cell before or after)."""
    raw = str(text)
    s = raw.replace("\\", "\\\\").replace("|", "\\|")
    for ch in "*_`[]<>#":
        s = s.replace(ch, "\\" + ch)
    s = " ".join(s.split())
    if s and raw[:1].isspace():
        s = " " + s
    if s and raw[-1:].isspace():
        s += " "
    return s


def cell_md(c: Cell, link_ext: str = ".md") -> str:
    if isinstance(c, Link):
        href, _, anchor = c.href.partition("#")
        if href.endswith(".html") and "/" not in href:  # another document: its Markdown
            href = href[: -len(".html")] + link_ext
        href += f"#{anchor.lower()}" if anchor else ""
        return f"[{_md(c.text)}]({href.replace(' ', '%20').replace(')', '%29')})"
    if isinstance(c, Badge):
        return f"**{_md(c.text.upper())}**"
    if isinstance(c, Code):  # literal inside the span; a pipe escaped for the table
        return "`" + " ".join(c.text.replace("`", "'").replace("|", "\\|").split()) + "`"
    if isinstance(c, tuple):
        return "".join(cell_md(x) for x in c)
    return _md(c)


def block_md(b: Block) -> str:
    if isinstance(b, Heading):
        anchor = f'<a id="{b.id.lower()}"></a>\n\n' if b.id else ""
        return anchor + "#" * min(max(b.level, 2), 4) + " " + _md(b.text).strip()
    if isinstance(b, Para):
        return "".join(cell_md(p) for p in b.parts)
    if isinstance(b, Items):
        return "\n".join(f"- {cell_md(i)}" for i in b.items) if b.items else "_none_"
    if isinstance(b, Pairs):
        return "\n".join(f"- **{_md(k)}**: {cell_md(v)}" for k, v in b.rows)
    if isinstance(b, Pre):  # a fence longer than any run of backticks in the text
        longest = max((len(m) for m in re.findall(r"`+", b.text)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}\n{b.text.rstrip()}\n{fence}"
    if not b.rows:
        return f"_{_md(b.empty)}_"
    lines = [
        "| " + " | ".join(_md(c) for c in b.columns) + " |",
        "|" + "---|" * len(b.columns),
    ]
    lines += ["| " + " | ".join(cell_md(c) for c in row) + " |" for row in b.rows]
    return "\n".join(lines)


def document_md(doc: Document) -> str:
    nav = " · ".join(
        f"[{_md(label)}]({slug}.md)" if slug != doc.slug else f"**{_md(label)}**"
        for label, slug in doc.nav
    )
    parts: list[str] = [f"# {_md(doc.title)}", f"_{_md(doc.ident)}_"]
    if nav:
        parts.insert(0, nav)
    if doc.subtitle:
        parts.append(_md(doc.subtitle))
    parts += [block_md(b) for b in doc.blocks]
    return "\n\n".join(parts) + "\n"


def grid(columns: Sequence[str], rows: Sequence[Sequence[Cell]], empty: str = "none") -> Grid:
    return Grid(tuple(columns), tuple(tuple(r) for r in rows), empty)
