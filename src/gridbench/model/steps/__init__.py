"""The built-in step kinds of a model's chain, one module each; each registers itself
(:func:`gridbench.model.steps.base.register_step_kind`) when imported here. ``ORDER`` is
their order in the model's error's list of choices; kinds registered from elsewhere
follow."""

from gridbench.model.steps.delay import KIND as DELAY
from gridbench.model.steps.poll import KIND as POLL
from gridbench.model.steps.side import KIND as SIDE
from gridbench.model.steps.tier import KIND as TIER

ORDER = (DELAY.name, TIER.name, SIDE.name, POLL.name)

__all__ = ["ORDER"]
