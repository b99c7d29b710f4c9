"""Analysis settings: warm-up, tolerances, windows and validity limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gridbench.errors import SpecError
from gridbench.jobflow.analysis.bottleneck import DEFAULT_TOLERANCE
from gridbench.jobflow.analysis.knee import DEFAULT_RESAMPLES
from gridbench.jobflow.analysis.series import MAX_POINTS
from gridbench.jobflow.analysis.validity import ValidityConfig
from gridbench.jobflow.analysis.warmup import DEFAULT_FRACTION

WARMUP_METHODS = ("fraction", "steady_state")


@dataclass(frozen=True, slots=True)
class AnalysisConfig:
    """Everything analysis can be tuned with (defaults follow METHODS.md)."""

    warmup_method: str = "fraction"
    warmup_fraction: float = DEFAULT_FRACTION
    tolerance: float = DEFAULT_TOLERANCE
    window_s: float | None = None  # windowed throughput; None = max(1 s, duration / 30)
    validity: ValidityConfig = field(default_factory=ValidityConfig)
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    max_points: int = MAX_POINTS
    series: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "warmup": {"method": self.warmup_method, "fraction": self.warmup_fraction},
            "tolerance": self.tolerance,
            "window_s": self.window_s,
            "late_share_max": self.validity.late_share_max,
            "dropped_share_max": self.validity.dropped_share_max,
            "cpu_bound_fraction": self.validity.cpu_bound_fraction,
            "coarse_factor": self.validity.coarse_factor,
            "clock_factor": self.validity.clock_factor,
            "bootstrap_resamples": self.resamples,
            "seed": self.seed,
        }


def parse_warmup(warmup: Any) -> tuple[str, float]:
    """Accept a fraction (0.15), a method name ("steady_state"), or a mapping
    ``{"method": ..., "fraction": ...}`` (the spec's ``warmup`` section)."""
    if warmup is None:
        return "fraction", DEFAULT_FRACTION
    if hasattr(warmup, "model_dump"):
        warmup = warmup.model_dump()
    if isinstance(warmup, bool):
        raise SpecError("warm-up must be a fraction or a method", where="warmup")
    if isinstance(warmup, int | float):
        method, fraction = "fraction", float(warmup)
    elif isinstance(warmup, str):
        method, fraction = warmup, DEFAULT_FRACTION
    elif isinstance(warmup, Mapping):
        method = str(warmup.get("method", "fraction"))
        fraction = float(warmup.get("fraction", DEFAULT_FRACTION))
    else:
        raise SpecError(
            f"warm-up {warmup!r} is not understood",
            where="warmup",
            fix="give a fraction like 0.15, 'steady_state', or {method: fraction, fraction: 0.15}",
        )
    if method not in WARMUP_METHODS:
        raise SpecError(
            f"unknown warm-up method {method!r}",
            where="warmup.method",
            fix=f"use one of {', '.join(WARMUP_METHODS)}",
        )
    if not 0.0 <= fraction < 1.0:
        raise SpecError(
            f"warm-up fraction {fraction} is outside [0, 1)",
            where="warmup.fraction",
            fix="the seed used 0.15",
        )
    return method, fraction
