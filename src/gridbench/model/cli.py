"""``gridbench model fit|predict|check`` as declarations (:mod:`gridbench.commandline`),
registered as a command set (``gridbench.commands``: a model is no family, its predictions
are job-flow runs). Each action runs a function of :mod:`gridbench.model.commands`,
imported (with scipy and SimPy) only when the action runs."""

from __future__ import annotations

import argparse

from gridbench.commandline import RESULTS, RUN, Command, Commands, arg

_AT = "gridbench.model.commands"

SWEEP_HELP = (
    "KEY=V1,V2 (repeatable; the points are every combination): rate (2/s, 120/min), "
    "job.runtime (1s), or a model field such as tiers.workers.slots, status_update.policy "
    "or chain.STAGE.concurrency (a chain step named by its stage)"
)


#: gridbench.model.predict.MAX_SIMULATED (spelled here too: this module stays light)
MAX_SIMULATED = 10_000_000


def count(text: str) -> int:
    """``--max-jobs``: a whole number of at least 1."""
    n = int(text) if text.strip().isdigit() else 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least 1")
    return n


MAX_JOBS = arg(
    "--max-jobs",
    type=count,
    default=MAX_SIMULATED,
    metavar="N",
    help=f"the most simulated jobs and scheduler passes (default {MAX_SIMULATED:,}, "
    "a few minutes); a larger prediction is refused with its estimate",
)


def positive(text: str) -> int:
    """``--reps``: a whole number from 1 to 1000."""
    n = int(text) if text.strip().isdigit() else 0
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number from 1 to 1000")
    return n


COMMANDS = Commands(
    "model",
    (
        Command(
            "model",
            help="what-if: fit a chain model to a run, predict, check it",
            dest="model_action",
            actions=(
                Command(
                    "fit",
                    help="fit a chain model (YAML) to a measured job-flow run: the reference "
                    "grid's chain (with its staging links), or any backend's recorded chain "
                    "(Slurm: slots and scheduler passes)",
                    run=f"{_AT}:cmd_fit",
                    args=(
                        RUN,
                        RESULTS,
                        arg(
                            "--rates",
                            help="fit on these offered rates (1/s,2/s); default: those sustained",
                        ),
                        arg("--out", help="the model file (default: RUN_ID.model.yaml here)"),
                        arg("--name", help="the model's name"),
                        arg(
                            "--force", action="store_true", help="overwrite an existing model file"
                        ),
                        arg(
                            "--set",
                            action="append",
                            metavar="FIELD=VALUE",
                            help="declare a value the run cannot show, over the fitted one "
                            "(chain.slurm_end.concurrency=8, tiers.workers.slots=64)",
                        ),
                    ),
                ),
                Command(
                    "predict",
                    help="run a model over rates and settings never measured "
                    "(writes a run marked predicted)",
                    run=f"{_AT}:cmd_predict",
                    args=(
                        RESULTS,
                        arg("model", help="a model file (gridbench model fit)"),
                        arg("--sweep", action="append", metavar="KEY=V1,V2", help=SWEEP_HELP),
                        arg(
                            "--set",
                            action="append",
                            metavar="FIELD=VALUE",
                            help="change a model field first",
                        ),
                        arg(
                            "--rate",
                            default="1/s",
                            help="the offered rate when not swept (default 1/s)",
                        ),
                        arg(
                            "--duration",
                            default="10s",
                            help="submission window per trial (default 10s)",
                        ),
                        arg("--drain", default="60s", help="simulated time after it (default 60s)"),
                        arg("--arrival", choices=("uniform", "poisson"), default="uniform"),
                        arg(
                            "--reps",
                            type=positive,
                            default=3,
                            help="repetitions per point, different seeds",
                        ),
                        arg("--seed", type=int, default=1),
                        arg(
                            "--no-fit-uncertainty",
                            action="store_true",
                            help="repetitions keep the fitted means "
                            "(default: drawn from their uncertainty)",
                        ),
                        arg("--name", help="the predicted run's name"),
                        MAX_JOBS,
                    ),
                ),
                Command(
                    "check",
                    help="predict a measured run the model was not fitted on: the error per figure",
                    run=f"{_AT}:cmd_check",
                    args=(
                        arg("model", help="a model file"),
                        arg("run", help="a measured run: a results directory, an id, or latest"),
                        RESULTS,
                        arg(
                            "--reps",
                            type=positive,
                            default=3,
                            help="repetitions per point (default 3)",
                        ),
                        arg("--seed", type=int, default=1),
                        arg("--json", action="store_true", help="print the rows as JSON too"),
                        MAX_JOBS,
                    ),
                ),
            ),
        ),
    ),
)
