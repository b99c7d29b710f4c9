"""Old import path, a thin re-export for plugins: use
:mod:`gridbench.jobflow.events.model`."""

from gridbench.jobflow.events.model import *  # noqa: F403
