"""Evaluation campaigns (IEEE 829): components of units across benchmark families.

A campaign file names its components; each holds units, and a unit is a spec of any
family (a file, with ``--set`` overrides) plus its pass criteria (thresholds, validity)
and repetitions. ``gridbench campaign validate|plan|run|status|report CAMPAIGN.yaml``
(docs/campaigns.md).

Generic: this package knows no family. A unit's family is found from its spec through the
family registry (:func:`gridbench.family.family_of_spec`), and the unit runs as the
family's own command (``gridbench [FAMILY] run SPEC --set ...``, in a process of its own,
so that a unit that crashes never takes the campaign with it); its run folder is read
back through the family (``exit_code``, ``verdict``, ``report``, ``figures``).

Modules: ``model`` (the campaign file, checked with file:line and the fix), ``units``
(each unit as its family's command: validate, plan, run), ``folder`` (the campaign
folder in the results store, its append-only log, links to the units' run folders),
``runner`` (running, suspension, resumption), ``verdicts`` (each run against its pass
criteria; the incidents), ``previous`` (the comparison with the previous campaign and the
trend), ``documents`` and ``render`` (the IEEE 829 documents, HTML and Markdown),
``command`` (the CLI), ``exclude`` (``gridbench exclude|include``), ``cleanup``.
"""
