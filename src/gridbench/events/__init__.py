"""Old import paths, kept for backend plugins written before job flow became one package.

Job flow's events live in :mod:`gridbench.jobflow.events`; the modules here only re-export
what a backend's signatures use (``chain``: the stage chain, ``model``: the event).
New code imports from ``gridbench.jobflow.events``.
"""
