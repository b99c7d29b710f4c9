"""Specs shipped with the package (the demo)."""

from __future__ import annotations

from pathlib import Path


def demo_spec_path() -> Path:
    """The compressed EDGI rate ramp run by ``gridbench demo``."""
    return Path(__file__).with_name("demo.yaml")
