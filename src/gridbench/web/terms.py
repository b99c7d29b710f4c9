"""An error as the dashboard says it: a family's errors are written for the command line
("pass --force", "give 'gridbench compare' runs of one family"), and a page that shows one
speaks of its own fields and pages instead (issue 41: /start's errors gave CLI fixes).

Only the wording changes: what was wrong, where and the fix stay as the family said them.
"""

from __future__ import annotations

import re

#: command-line phrases and what the dashboard calls the same thing, in order
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), r)
    for p, r in (
        (r" \(or --force\)", ""),  # (io's fix says "set 'force: true'" already)
        (r",? or pass --force\b", ", or set force: true in the spec"),
        (r"\bwrite --set [\w.]+=\w+", "edit the spec"),
        (r"--set ([\w.]+)=\S+", r"the spec's \1"),
        (r"the kind column of 'gridbench list'", "the Kind column of the Experiments page"),
        (r"give 'gridbench compare' runs", "pick runs"),
        (r"give 'gridbench history' runs", "pick runs"),
        (r"'gridbench analy[sz]e [^']*'", "the experiment page's Analyse now button"),
        (r"\bgridbench analy[sz]e \S+", "the experiment page's Analyse now button"),
        (r"'gridbench list'", "the Experiments page"),
        (r"--max-running\b", "the dashboard's limit of runs at once"),
    )
)


def in_dashboard_terms(text: str) -> str:
    """``text`` (an error's message, where or fix) with the command line's phrases as the
    dashboard names them."""
    for pattern, repl in _PHRASES:
        text = pattern.sub(repl, text)
    return text


def error_in_dashboard_terms(error: dict[str, str]) -> dict[str, str]:
    """:func:`gridbench.family.dashboard.error_dict`'s dict with :func:`in_dashboard_terms`
    applied."""
    return {k: in_dashboard_terms(v) if isinstance(v, str) else v for k, v in error.items()}
