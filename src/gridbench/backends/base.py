"""Old import path, a thin re-export for plugins: use
:mod:`gridbench.jobflow.backends.base`."""

from gridbench.jobflow.backends.base import *  # noqa: F403
