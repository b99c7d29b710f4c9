"""gridbench-timeit: a benchmark family in a plugin package, to prove the family seam.

It times a local command N times (``gridbench timeit run SPEC``) and plugs in only through
the ``gridbench.families`` entry point (``gridbench_timeit-0.1.dist-info`` next to this
package: put ``tests/plugins`` on PYTHONPATH). It uses gridbench's public seam only:
:mod:`gridbench.family`, :mod:`gridbench.sections`, :mod:`gridbench.store.layout`,
:mod:`gridbench.errors` and, when present, the shared thresholds of
:mod:`gridbench.thresholds`.
"""

from gridbench_timeit.family import FAMILY, Timeit

__all__ = ["FAMILY", "Timeit"]
