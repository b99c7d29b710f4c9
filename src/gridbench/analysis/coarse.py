"""A coarse overall latency, demoted for load models whose figures do not rest on it.

Its own module (no imports) because the load models that use it are imported by the
validity rules' own imports.
"""

from __future__ import annotations

from typing import Any, Final

#: how a coarse-precision reason reads after the latency's name
COARSE_PHRASE: Final = " is measured with stamps of "


def coarse_overall_as_warning(validity: dict[str, Any], why: str) -> dict[str, Any]:
    """``validity`` with a coarse ``overall`` latency turned from a reason into a warning,
    for a load model whose figures do not rest on the overall latency (``why`` says so).
    The polled client_done stamp is often coarse against a short job; that spoils the
    overall latency, not a makespan read from server stamps or a call's duration."""
    prefix = "overall" + COARSE_PHRASE
    moved = [r for r in validity.get("reasons", []) if r.startswith(prefix)]
    if not moved:
        return validity
    reasons = [r for r in validity["reasons"] if not r.startswith(prefix)]
    warnings = [*validity.get("warnings", []), *(f"{r} ({why})" for r in moved)]
    return {**validity, "reasons": reasons, "warnings": warnings, "valid": not reasons}
