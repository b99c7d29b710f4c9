"""What-if models: a job-flow chain calibrated from a measured run, run on SimPy.

``gridbench model fit RUN`` writes a readable YAML model (``spec.py``) fitted from the
run's events (``fit.py``, ``fitdist.py``); ``predict`` runs it over rates and settings
never measured (``engine.py`` on SimPy, ``predict.py`` writes a run marked predicted);
``check`` predicts a measured run the model was not fitted on and reports the error per
figure (``check.py``).
"""
