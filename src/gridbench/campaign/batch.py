"""Several gridbench commands in one process: ``python -m gridbench.campaign.batch OUT``.

A campaign checks and estimates its units with their families' own ``validate`` and
``plan`` (``gridbench [FAMILY] plan SPEC --json --set ...``). Run one process each, every
unit would pay the command line's start-up (imports of a second and more); run here, it
is paid once for all of them. Like ``python -m gridbench.cli``, this is a program the
campaign starts, not a module it imports: it runs the command line by name, as its own
process's entry point.

Reads a JSON list of ``{"argv": [...], "cwd": "..."}`` on standard input; writes a JSON
list of ``{"code", "out", "err"}`` (exit code, standard output, standard error of each
command, in order) to the file ``OUT``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
from typing import Any


def run_all(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each command run in turn, its output captured."""
    cli = importlib.import_module("gridbench.cli")  # the program, by name (see above)
    here = os.getcwd()
    results = []
    for job in jobs:
        out, err = io.StringIO(), io.StringIO()
        try:
            os.chdir(str(job.get("cwd") or here))
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = int(cli.main([str(a) for a in job.get("argv") or []]))
                except SystemExit as exc:  # argparse: a usage error
                    code = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:  # one command's bug is its own result, not the batch's
            code = 2
            err.write(f"internal error: {type(exc).__name__}: {exc}\n")
        finally:
            os.chdir(here)
        results.append({"code": code, "out": out.getvalue(), "err": err.getvalue()})
    return results


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m gridbench.campaign.batch OUT < JOBS.json", file=sys.stderr)
        return 2
    jobs = json.load(sys.stdin)
    results = run_all(jobs if isinstance(jobs, list) else [])
    with open(args[0], "w", encoding="utf-8") as fh:
        json.dump(results, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
