"""TRANSITION: ``gridbench.jobflow.family`` still imports load_series from here; it lives
in :mod:`gridbench.jobflow.report.loading` now (remove this module once it does not)."""

from __future__ import annotations

from gridbench.jobflow.report.loading import load_metrics, load_series

__all__ = ["load_metrics", "load_series"]
