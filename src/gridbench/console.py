"""The command line's consoles and what it was asked for beyond one command's arguments.

The consoles are made on first use (rich costs tens of milliseconds to import, which
``gridbench --help`` and ``--version`` need not pay); :data:`SETTINGS` holds the global
``-v/--verbose``, set once the line is parsed and read by what prints a report.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class LazyConsole:
    """A rich Console made on first use: rich costs tens of milliseconds to import, which
    ``gridbench --help`` and ``--version`` need not pay."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._made: Console | None = None

    @property
    def real(self) -> Console:
        """The console itself."""
        if self._made is None:
            from rich.console import Console

            self._made = Console(**self._options)
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


# ":fire:" in data stays text; outside a terminal (a pipe, a log) a line is never wrapped at
# 80 columns, so a path stays whole (issue 41)
console = LazyConsole(highlight=False, emoji=False, soft_wrap=not sys.stdout.isatty())
err_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def safe_markup(text: object) -> str:
    """:func:`gridbench.fmt.safe_markup` (imported when first needed: it brings rich)."""
    from gridbench.fmt import safe_markup as made_safe

    return made_safe(text)


class _Settings:
    """What the whole command line was asked for, beyond one command's arguments."""

    verbose = False


SETTINGS = _Settings()
