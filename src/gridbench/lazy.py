"""A module imported when first used: ``pl = lazy_module("polars")`` at the top of a module
that needs polars only inside its functions, so that importing the module (a job-flow
spec's load models, say, which ``gridbench validate`` loads) does not import polars.

The type checker sees the real module::

    if TYPE_CHECKING:
        import polars as pl
    else:
        pl = lazy_module("polars")
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module ``name`` until an attribute is asked for, then imports it."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        module: ModuleType = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy_module(name: str) -> Any:
    """The module ``name``, imported when one of its attributes is first asked for."""
    return LazyModule(name)
