"""The command backend: ``backend.py`` is the class gridbench registers; its neighbours:

=================  ========================================================================
``option_models``  the pydantic models of ``backend.options`` (one per kind of template)
``options``        preset merging and compilation into ``CommandConfig`` (``compile_options``)
``presets``        the preset files (``preset_files/*.yaml``) and their metadata
``template``       argv and text templates and their placeholders
``calls``          a template rendered and run, its failure worded naming the template
``process``        the child-process runner that times each client call and its CPU
``output``         what a call printed: the stream read, the reason quoted when it failed
``parse``          job ids and states picked out of the output
``status``         the job states: ``status``, then ``finished`` for the ids it dropped
``staging``        what a job stages and its timed transfers (``upload``, ``download``)
``transfer``       a timed transfer's stamps, size and the job's directory
``upload``         the job's input written and uploaded before submit
``download``       a done job's output fetched after the status call
``serverside``     the server stamps of declared sources and the stage chain
``demo``           a tiny real batch-system CLI for trying the backend without a scheduler
=================  ========================================================================
"""
