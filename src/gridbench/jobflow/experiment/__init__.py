"""Running an experiment: the runner of a plan's trials (it hands each trial its load
model), the pre-flight checks and the cleanup after a crash. This is the part of running
that knows every load model; the trial machinery below the load models is in
:mod:`gridbench.jobflow.run`."""
