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
folder in the results store, its append-only log, links to the units' run folders);
running: ``run_plan`` (every unit and repetition, checked and estimated), ``session``
(the folder a run resumes or makes, its state after every event), ``runner`` (starting,
watching and ending the units' processes, suspension, resumption), ``ordering`` (which
unit may start now), ``run_folders`` (the run folder a unit made), ``processes`` (a
unit's process and its group); judging: ``verdicts`` (each run against its pass
criteria), ``incidents`` (the test incident reports), ``previous`` (the comparison with
the previous campaign and the trend); the IEEE 829 documents: ``view`` (the campaign
read once from its folder),
``document_parts`` (links, identifiers and sentences they share), ``plan_documents``
(index, test plan), ``case_documents`` (test designs, test cases), ``log_documents``
(test log, incident reports), ``summary_document`` (test summary report),
``documents`` (all of them written, with summary.json), ``render`` (HTML and Markdown);
``command`` (the CLI), ``exclude`` (``gridbench exclude|include``), ``cleanup``.
"""
