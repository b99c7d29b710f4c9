"""Named configurations of the reference grid.

``sequential`` (the default) is CREAM-like: the CE checks job statuses one call per job
and becomes the bottleneck above ~1/per_job_cost_s jobs/s. ``batched`` is the same grid
with one status call for all jobs: it keeps up at every demo rate. ``staging`` is the
batched grid with a slow output download (``bridge.stage_out``): with
:data:`DEMO_OUTPUT_SIZE` per job it moves 2.5 jobs/s, so the demo breaks at stage-out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.jobflow.reference.config import GridConfig, config_from_dict, merge, read_config_file
from gridbench.presets import unknown_preset

DEFAULT_PRESET = "sequential"

PRESETS: dict[str, dict[str, Any]] = {
    "sequential": {},  # the model defaults
    "batched": {"status_update": {"policy": "batched"}},
    # 640 KiB/s on one stream: 256 KiB per job takes 0.4 s, 2.5 jobs/s
    "staging": {
        "status_update": {"policy": "batched"},
        "bridge": {"stage_out": {"bandwidth_bps": 655360, "streams": 1}},
    },
}
#: what each preset shows (the dashboard's preset list)
PRESET_NOTES: dict[str, str] = {
    "sequential": "sequential status updates",
    "batched": "batched status updates",
    "staging": "batched status updates and a slow output download (2.5 jobs/s at 256k)",
}
#: the output a ``staging`` demo job downloads (``gridbench demo --policy staging``)
DEMO_OUTPUT_SIZE = "256k"

# Offered rates (jobs/s) of the demo ramp; the sequential preset breaks from the 3rd on.
DEMO_RATES_PER_S: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0, 5.0)


def preset_names() -> list[str]:
    """The names of the built-in configurations."""
    return list(PRESETS)


def build_config(
    preset: str = DEFAULT_PRESET,
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    overrides_at: str | None = None,
) -> GridConfig:
    """A preset, then a YAML file, then ``overrides`` deep-merged over it, validated;
    an error names the field under ``overrides_at`` (the spec field that gave the
    overrides) when given."""
    if preset not in PRESETS:
        raise unknown_preset(preset, PRESETS, where="preset", kind="reference grid preset")
    data: dict[str, Any] = dict(PRESETS[preset])
    source = f"preset {preset}"
    if path is not None:
        data = merge(data, read_config_file(path))
        source = str(path)
    if overrides:
        data = merge(data, overrides)
    return config_from_dict(data, source=source, spec_field=overrides_at)


def preset(name: str) -> GridConfig:
    """The named built-in configuration."""
    return build_config(name)
