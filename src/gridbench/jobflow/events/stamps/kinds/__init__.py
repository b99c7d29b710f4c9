"""The built-in stamp-source kinds, one module each; each registers itself
(:func:`gridbench.jobflow.events.stamps.kind.register_stamp_kind`) when imported here.
``ORDER`` is their order in the ``sources:`` union (and its error's list of choices);
kinds registered from elsewhere follow, in the order they were registered."""

from gridbench.jobflow.events.stamps.kinds import files, log, sqlite

ORDER = (sqlite.KIND.name, log.KIND.name, files.KIND.name)

__all__ = ["ORDER", "files", "log", "sqlite"]
