"""Trial machinery below the load models: the trial runner and the context it hands a
load model, open and closed loops, status tracking, recorders, remote agents, collectors."""
