"""Old import path, a thin re-export for plugins: use
:mod:`gridbench.jobflow.backends.operations`."""

from gridbench.jobflow.backends.operations import *  # noqa: F403
