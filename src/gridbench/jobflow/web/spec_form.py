"""The fields of the new-experiment form, each bound to one dotted path of the spec.

The form and the YAML are two views of one spec: the page keeps the spec as data, a field
edit sets its path and re-renders the YAML, a YAML edit is parsed by the server and sets
every field. Paths not in the form are kept untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

from gridbench.jobflow import loads as load_models
from gridbench.jobflow.backends.registry import available


@dataclass(frozen=True)
class Field:
    path: str
    label: str
    kind: str  # text | int | select | json | csv
    help: str = ""
    choices: tuple[str, ...] = ()


def fields() -> list[tuple[str, list[Field]]]:
    """Form sections and their fields."""
    return [
        ("Experiment", [
            Field("name", "name", "text", "shown in the list and the reports"),
            Field("description", "description", "text"),
        ]),
        ("Backend", [
            Field("backend.type", "backend", "select", "the system under test",
                  tuple(sorted(available()))),
            Field("backend.options", "options (JSON)", "json",
                  "the backend's own settings; secrets only by reference (agent, key file, env)"),
        ]),
        ("Job", [
            Field("job.command", "command (JSON list)", "json", 'e.g. ["/bin/sleep", "1"]'),
            Field("job.runtime", "runtime", "text", "for simulating backends, e.g. 1s"),
        ]),
        ("Load", [
            Field("load.model", "model", "select", "", load_models.names()),
            Field("load.arrival", "arrival", "select", "open model", ("uniform", "poisson")),
            Field("load.rate", "rate", "text", "2/s, 120/min; a bare number is per minute"),
            Field("load.pool", "submitters (pool)", "int"),
            Field("sweep.rate", "sweep of rates", "csv", "comma-separated, e.g. 1/s, 2/s, 4/s"),
        ]),
        ("Trials", [
            Field("trials", "trials per point", "int"),
            Field("trial.duration", "submission window", "text", "e.g. 30s"),
            Field("trial.jobs", "or jobs per trial", "int"),
        ]),
        ("Timeouts", [
            Field("timeouts.status_interval", "status interval", "text", "e.g. 0.5s"),
            Field("timeouts.drain", "drain", "text"),
            Field("timeouts.settle", "settle", "text"),
        ]),
        ("Safety caps", [
            Field("safety.max_rate", "max rate", "text"),
            Field("safety.max_jobs", "max jobs", "int"),
            Field("safety.confirm_above", "confirm above (jobs)", "int"),
        ]),
    ]  # fmt: skip
