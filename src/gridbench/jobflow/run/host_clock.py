"""The host's own clock-sync state, from ``chronyc -c tracking`` where chrony runs.

gridbench estimates each agent's offset from the controller itself (run/clock_sync.py); the
host's NTP state says how far the controller's clock, and so every corrected time, is from
true time. It is recorded in trial.json (``clock_sync``; each agent's under ``agents[name].
sync``). Without chrony, or when chronyd does not answer, the record says why:
``{"available": false, "reason": "..."}``; never an error.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

CHRONYC = "chronyc"
TIMEOUT_S = 3.0

# The fields of `chronyc -c tracking`, in order (chronyc(1), "tracking"); seconds unless
# named otherwise. system_time_s is chronyc's signed "System time" (its CSV sign).
TRACKING_FIELDS: tuple[tuple[str, type], ...] = (
    ("reference_id", str),
    ("reference_name", str),
    ("stratum", int),
    ("ref_time_s", float),
    ("system_time_s", float),
    ("last_offset_s", float),
    ("rms_offset_s", float),
    ("frequency_ppm", float),
    ("residual_freq_ppm", float),
    ("skew_ppm", float),
    ("root_delay_s", float),
    ("root_dispersion_s", float),
    ("update_interval_s", float),
    ("leap_status", str),
)


def unavailable(reason: str) -> dict[str, Any]:
    """The record of a host whose sync state cannot be read."""
    return {"available": False, "source": "chronyc", "reason": reason}


def parse_tracking(text: str) -> dict[str, Any]:
    """One ``chronyc -c tracking`` CSV line as a dict (``available``: True, ``synchronised``:
    leap status other than "Not synchronised" and a stratum below 16); a line that is not
    that gives an ``unavailable`` record naming what was wrong."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return unavailable("chronyc printed nothing")
    parts = lines[-1].split(",")
    if len(parts) != len(TRACKING_FIELDS):
        return unavailable(
            f"chronyc -c tracking printed {len(parts)} fields, expected "
            f"{len(TRACKING_FIELDS)}: {lines[-1][:200]!r}"
        )
    out: dict[str, Any] = {"available": True, "source": "chronyc"}
    for (name, kind), raw in zip(TRACKING_FIELDS, parts, strict=True):
        try:
            out[name] = kind(raw.strip())
        except ValueError:
            return unavailable(f"chronyc -c tracking: {name} is not a {kind.__name__}: {raw!r}")
    out["synchronised"] = out["leap_status"] != "Not synchronised" and out["stratum"] < 16
    return out


def chrony_tracking(
    extra_args: Sequence[str] = (), timeout_s: float = TIMEOUT_S, chronyc: str = CHRONYC
) -> dict[str, Any]:
    """Run ``chronyc -c [extra_args] tracking`` (no shell, a short time-out) and parse it;
    ``extra_args`` may name the daemon (``-h /run/chrony/chronyd.sock``)."""
    exe = shutil.which(chronyc)
    if exe is None:
        return unavailable(f"{chronyc} is not installed (Debian package chrony)")
    argv = [exe, "-c", *extra_args, "tracking"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return unavailable(f"{chronyc} did not answer within {timeout_s:g} s")
    except OSError as exc:
        return unavailable(f"{chronyc} could not be run: {exc}")
    if r.returncode != 0:
        why = (r.stderr or r.stdout).strip().splitlines()
        return unavailable(
            f"{chronyc} failed (exit {r.returncode}): {why[-1] if why else 'no message'}"
        )
    return parse_tracking(r.stdout)
