"""Job flow's commands as declarations (:mod:`gridbench.commandline`): validate, plan, run,
demo, collect, export, check, ingest, reference and backends. Each runs a function of
:mod:`gridbench.jobflow.commands`, imported only when the command runs; this module
imports nothing of job flow, so ``gridbench --help`` answers at once."""

from __future__ import annotations

import argparse

from gridbench.commandline import RESULTS, RUN, Command, Commands, arg, spec_args

_AT = "gridbench.jobflow.commands"
SPEC = spec_args(what="experiment spec (YAML)", example="--set trials=5 --set load.rate=2/s")

#: ``gridbench reference serve`` and ``python -m gridbench.jobflow.reference``: the
#: reference grid's options (the presets and tiers are checked against the grid's own in
#: tests/jobflow/test_reference_cli.py)
REFERENCE_SERVE_ARGS = (
    arg(
        "--preset",
        default="sequential",
        choices=["sequential", "batched", "staging"],
        help="built-in configuration (default: %(default)s)",
    ),
    arg("--config", metavar="FILE", help="YAML file merged over the preset"),
    arg("--host", default="127.0.0.1", help="address (default: %(default)s)"),
    arg("--port", type=int, default=8750, help="port, 0 for any (default: %(default)s)"),
    arg("--allow-remote", action="store_true", help="allow a non-loopback --host (no auth!)"),
    arg("--reports-dir", metavar="DIR", help="where to write monitoring reports"),
    arg("--seed", type=int, help="random seed of the simulation"),
    arg(
        "--tier",
        default="all",
        choices=["all", "ce", "bridge"],
        help="run every tier (default), the CE alone (with --bridge-url) or the bridge and "
        "worker pool alone: two processes, on two hosts (docs/reference-grid.md)",
    ),
    arg("--bridge-url", metavar="URL", help="the bridge tier's URL (--tier ce)"),
    # what gridbench passes when it starts a tier over SSH: the configuration inline (no
    # file on that host), and stop when stdin closes (the connection went away)
    arg("--config-json", metavar="JSON", help=argparse.SUPPRESS),
    arg("--stop-on-eof", action="store_true", help=argparse.SUPPRESS),
    arg(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="server log level (default: %(default)s)",
    ),
)

_FORCE = arg(
    "--force",
    action="store_true",
    help="replace a RUN_DIR an earlier ingest made (never a measured run)",
)

COMMANDS = Commands(
    "jobflow",
    (
        Command(
            "validate",
            help="check a spec and report every problem with its line (and warn about a "
            "setting the backend would ignore, such as a staging size)",
            run=f"{_AT}:cmd_validate",
            args=SPEC,
        ),
        Command(
            "plan",
            help="dry run: points × trials, job count, duration; with schedule: the trial "
            "order, estimated starts and end; submits nothing",
            run=f"{_AT}:cmd_plan",
            args=(*SPEC, arg("--json", action="store_true", help="print the plan as JSON")),
        ),
        Command(
            "run",
            help="run an experiment, analyse it and write its reports",
            run=f"{_AT}:cmd_run",
            args=(
                *SPEC,
                RESULTS,
                arg(
                    "-y",
                    "--yes",
                    action="store_true",
                    help="confirm plans above safety.confirm_above without asking",
                ),
                arg(
                    "--fail-invalid",
                    action="store_true",
                    help="exit 4 when the validity verdict says the measurement is invalid",
                ),
            ),
        ),
        Command(
            "demo",
            help="run the compressed EDGI rate ramp on the embedded reference grid",
            run=f"{_AT}:cmd_demo",
            args=(
                RESULTS,
                arg(
                    "--policy",
                    choices=["sequential", "batched", "staging"],
                    default="sequential",
                    help="the grid's preset: the CE's status-update policy (default: "
                    "sequential, CREAM-like; batched keeps up), or staging (batched, with a "
                    "slow output download that breaks from 3 jobs/s)",
                ),
                arg("--quick", action="store_true", help="one short trial per rate"),
                arg(
                    "--lab",
                    metavar="NAME",
                    help="run the grid's tiers on a lab's hosts (gridbench lab up): the CE on "
                    "its first host, the bridge and workers on its second, each host sampled "
                    "(docs/reference-grid.md)",
                ),
                arg(
                    "--set",
                    action="append",
                    default=[],
                    metavar="KEY=VALUE",
                    help="override a field of the demo spec",
                ),
                arg("-y", "--yes", action="store_true", help=argparse.SUPPRESS),
                arg("--fail-invalid", action="store_true", help=argparse.SUPPRESS),
            ),
        ),
        Command(
            "collect",
            help="fetch the agents' logs of a run (after a controller crash) and merge them",
            run=f"{_AT}:cmd_collect",
            args=(RUN, RESULTS),
            parser={
                "description": "Copy every agent's own event log (load.agents as a block) "
                "into RUN/agents/ - from the run itself for local processes, with scp over "
                "the spec's ssh settings for hosts - and append to each trial's event log "
                "the events it lacks. Idempotent and append-only: collecting twice adds "
                "nothing. Then run 'gridbench analyze RUN' (and 'gridbench cleanup RUN' "
                "for jobs left queued)."
            },
        ),
        Command(
            "export",
            help="write a run's events (CSV or columnar log) as CSV or Parquet",
            run=f"{_AT}:cmd_export",
            args=(
                RUN,
                RESULTS,
                arg("--format", choices=["csv", "parquet"], default="csv", help="default: csv"),
                arg("--out", metavar="DIR", help="where to write (default: RUN/export)"),
            ),
            parser={
                "description": "Write each trial's event log of RUN - the columnar "
                "events.arrows or the events.csv of older runs - to "
                "OUT/<trial>.events.csv or .parquet (default OUT: RUN/export), one trial "
                "in memory at a time; the run's own files are left as they are. The way to "
                "a CSV of a run."
            },
        ),
        Command(
            "check",
            help="check the backend answers and one tiny job runs end to end (and, with "
            "load.agents as a block, every agent)",
            run=f"{_AT}:cmd_check",
            args=(
                *SPEC,
                arg("--timeout", type=float, default=60.0, help="seconds to wait for the job"),
            ),
            parser={
                "description": "Check that the backend answers and that one tiny job runs "
                "end to end. When the spec's open load has load.agents as a block, also "
                "check every agent: its host answers over SSH (hosts), it runs the "
                "controller's gridbench version, its clock offset ± bound, and the same "
                "backend check run on the agent itself. Exit status 0 when every step "
                "passed."
            },
        ),
        Command(
            "ingest",
            help="import foreign events into a results directory",
            dest="format",
            metavar="FORMAT",
            actions=(
                Command(
                    "edgi",
                    help="EDGI monitoring reports joined to client events",
                    run=f"{_AT}:cmd_ingest_edgi",
                    args=(
                        arg(
                            "--client",
                            required=True,
                            metavar="CLIENT_EVENTS",
                            help="client events: an event log (events.arrows or events.csv) "
                            "or a .jsonl file",
                        ),
                        arg(
                            "--reports",
                            required=True,
                            action="append",
                            metavar="DIR_OR_URL",
                            help="report directory or listing URL, nearest component first "
                            "(repeatable; TIER=DIR_OR_URL names the tier)",
                        ),
                        arg("--out", required=True, metavar="RUN_DIR"),
                        _FORCE,
                    ),
                ),
                Command(
                    "jsonl",
                    help="events in the documented JSON-lines format",
                    run=f"{_AT}:cmd_ingest_jsonl",
                    args=(arg("file"), arg("--out", required=True, metavar="RUN_DIR"), _FORCE),
                ),
            ),
        ),
        Command(
            "reference",
            help="the reference grid (a real HTTP CE -> bridge -> DG chain)",
            dest="action",
            actions=(
                Command(
                    "serve",
                    help="serve the reference grid until interrupted",
                    run=f"{_AT}:cmd_reference_serve",
                    args=REFERENCE_SERVE_ARGS,
                ),
            ),
        ),
        Command(
            "backends",
            help="list available backends (built-in and plugins)",
            run=f"{_AT}:cmd_backends",
        ),
    ),
)
