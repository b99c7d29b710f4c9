"""Old import path, a thin re-export for plugins: use
:mod:`gridbench.jobflow.backends.batch_cli`."""

from gridbench.jobflow.backends.batch_cli import *  # noqa: F403
