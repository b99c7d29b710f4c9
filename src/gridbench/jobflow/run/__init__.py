"""Trial orchestration: load models, dispatcher, status tracking, collectors, safety."""
