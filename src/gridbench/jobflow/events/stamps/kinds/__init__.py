"""The built-in stamp-source kinds, one module each; each registers itself
(:func:`gridbench.jobflow.events.stamps.kind.register_stamp_kind`) when imported here.
``ORDER`` is their order in the ``sources:`` union (and its error's list of choices);
kinds registered from elsewhere follow, in the order they were registered."""

from gridbench.jobflow.events.stamps.kinds.files import KIND as FILES
from gridbench.jobflow.events.stamps.kinds.log import KIND as LOG
from gridbench.jobflow.events.stamps.kinds.sqlite import KIND as SQLITE

ORDER = (SQLITE.name, LOG.name, FILES.name)

__all__ = ["ORDER"]
