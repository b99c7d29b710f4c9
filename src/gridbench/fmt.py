"""Number formatting shared by the families (the text of their report sections) and the
renderers; CSV and JSON keep the raw values. Also the one way text from data reaches a
terminal: control characters made visible, Rich markup escaped."""

from __future__ import annotations

import math
import re
from typing import Any

from rich.markup import escape
from rich.text import Text


def fmt_number(x: float) -> str:
    """A compact number: integers without decimals, else 3 significant digits."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    if abs(x) >= 1000:
        return f"{x:.0f}"
    return f"{x:.3g}"


def fmt_rate(r: float | None) -> str:
    """'0.667/s (40/min)', or 'n/a'."""
    if r is None:
        return "n/a"
    return f"{fmt_number(r)}/s ({fmt_number(r * 60.0)}/min)"


def fmt_s(x: float | None) -> str:
    """Seconds at a precision that suits the magnitude (the seed used 2 decimals)."""
    if x is None:
        return "–"
    if abs(x) >= 0.1 or x == 0:
        return f"{x:.2f}"
    return f"{x:.3g}"


def fmt_val(x: Any, digits: int = 3) -> str:
    """Any table cell: None as '–', floats to ``digits`` significant digits."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return fmt_number(x) if digits == 3 else f"{x:.{digits}g}"
    return str(x)


def fmt_pct(x: float | None) -> str:
    """'12.3%' or '–'."""
    return "–" if x is None else f"{x:.1f}%"


def fmt_pm(mean: float | None, std: float | None, digits: int = 3) -> str:
    """'0.323 ± 0.007': the mean to ``digits`` significant digits, the std to the same
    decimals (± omitted when std is unknown)."""
    if mean is None:
        return "–"
    a = abs(mean)
    decimals = max(0, digits - 1 - math.floor(math.log10(a))) if a > 0 else digits
    text = f"{mean:.{decimals}f}"
    return text if std is None else f"{text} ± {std:.{decimals}f}"


def fmt_count_pm(mean: float | None, std: float | None) -> str:
    """Counts per trial: '31 ± 1', '5 ± 1.41', '0 ± 0'."""
    if mean is None:
        return "–"
    text = fmt_number(mean)
    return text if std is None else f"{text} ± {fmt_number(std)}"


# -- text from data, on a terminal ---------------------------------------------------------
#: Characters a terminal acts on rather than shows: C0 controls but tab and newline, DEL,
#: C1 controls, and the Unicode bidi/line controls that reorder or break what is shown.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _shown(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object) -> str:
    """``text`` with every control character written out (ESC as ``\\x1b``, a bidi
    override as ``\\u202e``), so a string from data cannot clear the screen, set the
    title or reorder a line; tab and newline stay."""
    return _CONTROL.sub(_shown, str(text))


def safe_markup(text: object) -> str:
    """``text`` made :func:`visible` and escaped for Rich markup: the one way a string
    from data goes into a markup string ('[link=...]' in a name stays text)."""
    return escape(visible(text))


def safe_text(text: object, style: str = "") -> Text:
    """A Rich ``Text`` of :func:`visible` ``text`` (never parsed as markup)."""
    return Text(visible(text), style=style)
