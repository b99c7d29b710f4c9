"""Old import path, a thin re-export for plugins: use
:mod:`gridbench.jobflow.backends.options`."""

from gridbench.jobflow.backends.options import *  # noqa: F403
