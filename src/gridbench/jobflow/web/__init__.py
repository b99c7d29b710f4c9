"""Job flow's dashboard pages: the new-experiment form (``/new``), presets, agents and the
live view of a job-flow run. The dashboard includes them through the family seam
(:class:`~gridbench.family.dashboard.WebPages`: ``JobFlow.web_pages``) and hands in its
:class:`~gridbench.family.dashboard.WebContext` (templates, the run manager, the checks' slots):
nothing here imports the web layer."""
