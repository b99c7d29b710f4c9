"""Job flow's side of ``gridbench compare`` and ``history``: how a run is loaded (with its
per-job latency samples), which metrics runs share, each run's measurements per sweep
point, and the history's metric paths. The family hands these to gridbench.compare
through :class:`gridbench.swept.SweptComparable`; the statistics live there."""
