"""The reference grid: a real HTTP service simulating the EDGI chain (CE -> bridge -> DG).

Public API::

    from gridbench.jobflow.reference import GridConfig, ReferenceGrid, build_config, serve
    url = ReferenceGrid(build_config("batched")).start_background()   # thread, port 0
"""

from gridbench.jobflow.reference.config import Dist, GridConfig, config_from_dict, load_config
from gridbench.jobflow.reference.presets import DEMO_RATES_PER_S, PRESETS, build_config, preset
from gridbench.jobflow.reference.server import ReferenceGrid, add_arguments, main, run, serve

__all__ = [
    "DEMO_RATES_PER_S",
    "PRESETS",
    "Dist",
    "GridConfig",
    "ReferenceGrid",
    "add_arguments",
    "build_config",
    "config_from_dict",
    "load_config",
    "main",
    "preset",
    "run",
    "serve",
]
