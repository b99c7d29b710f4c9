"""``gridbench study``'s actions as declarations (:mod:`gridbench.commandline`); each runs
a function of :mod:`gridbench.study.command` (``serve``: of
:mod:`gridbench.study.serve_command`), imported only when the action runs."""

from __future__ import annotations

import argparse

from gridbench.commandline import (
    RESULTS,
    RUN,
    SERVE_ARGS,
    Arg,
    Command,
    Commands,
    arg,
    spec_args,
)

_AT = "gridbench.study.command"

EPILOG_VALIDATE = """examples:
  gridbench study validate examples/study-ahe.yaml
  gridbench study validate my-study.yaml --set analysis.alpha=0.01"""
EPILOG_PLAN = """examples:
  gridbench study plan examples/study-ahe.yaml
  gridbench study plan examples/study-ahe.yaml --json"""
EPILOG_IMPORT = """The CSV's generic layout (docs/study.md): one row per participant and tool;
columns participant, tool, sus1..sus10, and per task any of <task>_time_s, <task>_success,
<task>_difficulty, <task>_satisfaction, <task>_failure. The spec's import: block maps a
survey tool's own headers onto these names. Every problem is listed with its row and
column, and nothing is imported until there are none.

examples:
  gridbench study import examples/study-ahe.yaml --responses examples/study-responses.csv
  gridbench study import examples/study-import.yaml --responses examples/study-export.csv \\
      --survey examples/study-install.csv --out results/workbench-2009"""
SERVE_EPILOG = """Each participant gets a personal link, printed here once and never stored (the
log keeps only its hash): hand each person their own. The admin and observer pages need
the dashboard's token when served off loopback; participant links do not.

examples:
  gridbench study serve examples/study-ahe.yaml
  gridbench study serve --run latest                 # reopen: issued links keep working
  gridbench study serve --run latest --new-links     # new links, the old ones revoked
  GB_TOKEN=... gridbench study serve my-study.yaml --host 0.0.0.0 --token-env GB_TOKEN"""

SPEC = spec_args(
    what="study spec (YAML), see docs/study.md and examples/study-*.yaml",
    example="--set analysis.alpha=0.01",
)


def _action(name: str, run: str, text: str, epilog: str, args: tuple[Arg, ...]) -> Command:
    """An action whose --help says ``text`` as a sentence, then ``epilog`` as written."""
    return Command(
        name,
        help=text,
        run=run,
        args=args,
        parser={
            "description": text[0].upper() + text[1:] + ".",
            "epilog": epilog,
            "formatter_class": argparse.RawDescriptionHelpFormatter,
        },
    )


COMMANDS = Commands(
    "study",
    (
        Command(
            "study",
            help="usability studies: deliver in the browser or import a survey export; "
            "paired tests",
            parser={
                "description": "Usability studies as the seeds ran them: timed tasks with "
                "Start/Stop, SUS after each tool, Likert difficulty and satisfaction, an "
                "observer's verdicts, a counterbalanced order; delivered in the browser with "
                "personal links and an append-only log, or imported from a survey tool's "
                "CSV; analysed with paired t-tests, effect sizes and a power analysis. See "
                "docs/study.md."
            },
            dest="study_action",
            actions=(
                _action(
                    "validate",
                    f"{_AT}:cmd_validate",
                    "check a study spec and report every problem with its line",
                    EPILOG_VALIDATE,
                    SPEC,
                ),
                _action(
                    "plan",
                    f"{_AT}:cmd_plan",
                    "show the test plan and the counterbalanced order each participant gets",
                    EPILOG_PLAN,
                    (*SPEC, arg("--json", action="store_true", help="print the design as JSON")),
                ),
                _action(
                    "import",
                    f"{_AT}:cmd_import",
                    "import a survey tool's CSV export into a study run, then analyse it",
                    EPILOG_IMPORT,
                    (
                        *SPEC,
                        arg(
                            "--responses",
                            required=True,
                            metavar="CSV",
                            help="the responses (generic layout or mapped)",
                        ),
                        arg(
                            "--survey",
                            metavar="CSV",
                            help="install/configuration survey answers (spec: install_survey)",
                        ),
                        arg(
                            "--out",
                            metavar="RUN_DIR",
                            help="the run folder to create (absent or empty), as 'gridbench "
                            "ingest --out'; default: a new folder under the results root named "
                            "after the study",
                        ),
                        arg(
                            "--accept-low-sus",
                            action="store_true",
                            help="keep SUS rows that look answered on a flipped scale (a "
                            "participant who truly rated the tool 25 or less); each is listed "
                            "as a warning",
                        ),
                        RESULTS,
                    ),
                ),
                _action(
                    "serve",
                    "gridbench.study.serve_command:cmd_serve",
                    "deliver a study in the browser: personal links, observer page, the dashboard",
                    SERVE_EPILOG,
                    (
                        arg("spec", nargs="?", help="study spec (YAML): creates a new study run"),
                        arg(
                            "--set",
                            action="append",
                            default=[],
                            metavar="KEY=VALUE",
                            help="override a spec field",
                        ),
                        arg(
                            "--run",
                            metavar="RUN",
                            help="reopen a study run (directory, id or 'latest')",
                        ),
                        arg(
                            "--new-links",
                            action="store_true",
                            help="with --run: issue every participant a new link (the old ones "
                            "stop working)",
                        ),
                        *SERVE_ARGS,
                    ),
                ),
                _action(
                    "report",
                    f"{_AT}:cmd_report",
                    "re-analyse a study run and rewrite its reports",
                    "",
                    (
                        RUN,
                        RESULTS,
                        arg("--json", action="store_true", help="print the metrics as JSON"),
                        arg(
                            "--free-text",
                            choices=("keep", "drop"),
                            help="drop: leave free text, background answers and complaints out "
                            "of every report of this run (to share it); keep: show them again. "
                            "metrics.json keeps them",
                        ),
                    ),
                ),
            ),
        ),
    ),
)
