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


DEFAULT_PORT = 8765


def add_serve_args(p: argparse.ArgumentParser) -> None:
    """The web server's options (``gridbench serve``, ``gridbench study serve``)."""
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    p.add_argument(
        "--results", metavar="DIR", help="results root (default: $GRIDBENCH_RESULTS or ./results)"
    )
    p.add_argument(
        "--token-env",
        metavar="VAR",
        help="environment variable holding the access token (required off loopback)",
    )
    p.add_argument(
        "--token-file", metavar="FILE", help="file holding the access token (first line)"
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="extra Host header name to accept (e.g. the machine's DNS name)",
    )
    p.add_argument(
        "--max-running",
        type=int,
        default=4,
        metavar="N",
        help="experiments running at once; more queue (default 4)",
    )
    p.add_argument(
        "--max-queued",
        type=int,
        default=16,
        metavar="N",
        help="experiments waiting for a slot; more are refused (default 16)",
    )
