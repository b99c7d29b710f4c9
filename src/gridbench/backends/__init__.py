"""Old import paths, kept for backend plugins written before job flow became one package.

Job flow's backends live in :mod:`gridbench.jobflow.backends`; the modules here only
re-export what a plugin backend imports (``base``, ``options``, ``operations``,
``batch_cli``, ``registry``). New code imports from ``gridbench.jobflow.backends``.
"""
