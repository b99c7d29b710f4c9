"""Command-line arguments every family's commands share, spelled once."""

from __future__ import annotations

import argparse

RUN_HELP = "results directory, run id, or 'latest'"


def add_results_arg(p: argparse.ArgumentParser) -> None:
    """``--results DIR``: the results root."""
    p.add_argument(
        "--results", metavar="DIR", help="results root (default: $GRIDBENCH_RESULTS or ./results)"
    )


def add_spec_args(p: argparse.ArgumentParser, *, what: str, example: str) -> None:
    """The spec file and repeatable ``--set KEY=VALUE`` overrides."""
    p.add_argument("spec", help=what)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a spec field, e.g. {example}",
    )


def add_run_arg(p: argparse.ArgumentParser) -> None:
    """A run: a results directory, an id from ``gridbench list``, or ``latest``."""
    p.add_argument("run", help=RUN_HELP)
