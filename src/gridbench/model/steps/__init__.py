"""The built-in step kinds of a model's chain, one module each; each registers itself
(:func:`gridbench.model.steps.base.register_step_kind`) when imported here. ``ORDER`` is
their order in the model's error's list of choices; kinds registered from elsewhere
follow."""

from gridbench.model.steps import delay, poll, side, tier

ORDER = (delay.KIND.name, tier.KIND.name, side.KIND.name, poll.KIND.name)

__all__ = ["ORDER", "delay", "poll", "side", "tier"]
