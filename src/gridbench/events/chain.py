"""Old import path, a thin re-export for plugins: use
:mod:`gridbench.jobflow.events.chain`."""

from gridbench.jobflow.events.chain import *  # noqa: F403
