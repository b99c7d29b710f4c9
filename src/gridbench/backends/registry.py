"""Old import path, a thin re-export for plugins: use
:mod:`gridbench.jobflow.backends.registry`."""

from gridbench.jobflow.backends.registry import *  # noqa: F403
