"""Report sources and their tiers: ``--reports`` values -> tagged :class:`ReportSource`
(nearest component first), tier names and their chain order. Pure: nothing is read here.

Tiers are given nearest first: ``ce=URL`` names one explicitly; bare sources take ``ce``,
``bridge``, ``tier2``, ``tier3``... by position. A single bare source may be a *tier root*
(``discover``): its sub-directories are the tiers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from gridbench.errors import IngestError

KNOWN_TIERS = ("ce", "bridge")
TIER_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_SPEC_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]{0,63})=(.+)$")


def default_tier_name(index: int) -> str:
    """Tier name of the ``index``-th bare source: ce, bridge, tier2, tier3..."""
    return KNOWN_TIERS[index] if index < len(KNOWN_TIERS) else f"tier{index}"


def tier_order_key(name: str, first_seen: int) -> tuple[int, int]:
    """Sort key putting known tiers in chain order (ce, bridge, tier2...), others after."""
    if name in KNOWN_TIERS:
        return (KNOWN_TIERS.index(name), 0)
    m = re.fullmatch(r"tier(\d+)", name)
    if m:
        return (int(m.group(1)), 0)
    return (1_000_000, first_seen)


@dataclass(frozen=True, slots=True)
class ReportSource:
    """One report location and the tier it belongs to.

    ``discover`` marks a single bare source that may turn out to be a tier root.
    """

    location: str
    tier: str
    explicit: bool = False
    discover: bool = False

    @property
    def is_url(self) -> bool:
        return is_url(self.location)


def is_url(s: str) -> bool:
    """An http(s) URL rather than a local path."""
    return s.lower().startswith(("http://", "https://"))


def parse_report_sources(specs: Sequence[str | ReportSource]) -> list[ReportSource]:
    """Turn ``--reports`` values (``LOC`` or ``TIER=LOC``) into tagged sources, nearest first.

    A value that is an existing local path is never split at ``=``.
    """
    if not specs:
        raise IngestError(
            "no monitoring-report source given",
            fix="pass --reports DIR_OR_URL (nearest component first), e.g. --reports ce=URL",
        )
    out: list[ReportSource] = []
    bare_index = 0
    for spec in specs:
        if isinstance(spec, ReportSource):
            out.append(spec)
            continue
        text = spec.strip()
        m = _SPEC_RE.match(text)
        if m and not is_url(text) and not Path(text).exists():
            tier, loc = m.group(1), m.group(2).strip()
            out.append(ReportSource(_normalise(loc), tier, explicit=True))
        else:
            out.append(ReportSource(_normalise(text), default_tier_name(bare_index)))
        bare_index += 1
    tiers = [s.tier for s in out]
    dup = sorted({t for t in tiers if tiers.count(t) > 1})
    if dup:
        raise IngestError(
            f"tier {dup[0]!r} is given more than once",
            where="--reports",
            fix="give each component's reports once, nearest first, or name them: "
            "ce=URL bridge=URL",
        )
    if len(out) == 1 and not out[0].explicit:
        out[0] = replace(out[0], discover=True)
    return out


def _normalise(loc: str) -> str:
    if not loc:
        raise IngestError("empty report location", where="--reports", fix="give a directory or URL")
    if not is_url(loc):
        if "://" in loc:
            raise IngestError(
                "only http://, https:// or local directories are supported",
                where=loc,
                fix="serve the reports over HTTP(S) or copy them to a local directory",
            )
        return loc
    parts = urlsplit(loc)
    if parts.username or parts.password:
        raise IngestError(
            "credentials in report URLs are not supported (they would end up in logs)",
            where=parts._replace(netloc=parts.hostname or "").geturl(),
            fix="give the URL without user:password@",
        )
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc, path, parts.query, ""))
