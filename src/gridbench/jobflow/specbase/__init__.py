"""The parts of an experiment spec below the load models: its blocks, the common part of
every ``load:`` block, and job rates. :mod:`gridbench.jobflow.spec` builds the full spec
(the registered models' union) on them."""
