"""The ``timeit`` family: a local command run N times without a shell, its wall time
recorded per repetition (``RUN/timings.jsonl``, one line as each finishes) and analysed into
``gridbench.timeit/1``: mean, sd, min, max and p50 of the wall time, failures, thresholds.

Spec (YAML)::

    name: true-timing
    command: [sleep, "0.01"]
    repetitions: 5
    thresholds:                      # optional, when gridbench has gridbench.thresholds
      - {metric: wall_s.p50, op: "<", value: 1}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shlex
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gridbench import thresholds as _thresholds
from gridbench.commandline import RESULTS, Command, Commands, arg
from gridbench.errors import (
    EXIT_BACKEND,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_THRESHOLD,
    ResultsError,
    SpecError,
)
from gridbench.family import CatalogueColumn, CatalogueEntry, Figure, Ui, ValidityRule
from gridbench.family.dashboard import Pages, WebContext
from gridbench.sections import (
    Chart,
    Column,
    EvaluationSummary,
    Finding,
    Headline,
    Report,
    Table,
)
from gridbench.store.layout import RunDir, now_iso, write_json

KIND = "timeit"
SCHEMA = "gridbench.timeit/1"
TIMINGS_FILE = "timings.jsonl"
FIGURE_KEY = "wall_time"
STATS = ("mean", "sd", "min", "max", "p50")


class TimeitSpec(BaseModel):
    """What to time and how often."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    command: list[str] = Field(min_length=1, description="argv, run without a shell")
    repetitions: int = Field(ge=1, le=10_000)
    thresholds: list[dict[str, Any]] = Field(default_factory=list)


def load_spec(path: Path) -> tuple[TimeitSpec, str]:
    """The spec at ``path`` and its text; SpecError with where and fix."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read the spec: {exc.strerror}", where=str(path)) from None
    return parse_spec(text, path), text


def parse_spec(text: str, path: Path | str) -> TimeitSpec:
    """The spec in ``text`` (read from ``path``); SpecError with where and fix."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise SpecError(
            f"not valid YAML: {str(exc).splitlines()[0]}", where=str(path), fix="fix the YAML"
        ) from None
    try:
        spec = TimeitSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "spec"
        raise SpecError(
            err["msg"],
            where=f"{path}: {loc}",
            fix="a timeit spec has name, command (a list), repetitions and optional thresholds",
        ) from None
    for i, t in enumerate(spec.thresholds):
        try:
            _thresholds.ThresholdSpec.model_validate(t)
        except ValidationError as exc:
            raise SpecError(
                exc.errors()[0]["msg"],
                where=f"{path}: thresholds.{i}",
                fix='e.g. {metric: wall_s.p50, op: "<", value: 1}',
            ) from None
    return spec


# -- running -----------------------------------------------------------------------------
class TimeitRunner:
    """Times the command ``repetitions`` times into a new results directory: the plugin's
    run command drives it, and so does the dashboard's /start (``StartsFromSpec``)."""

    def __init__(
        self, spec: TimeitSpec, text: str, root: Path, say: Callable[[str], None] = print
    ) -> None:
        self.spec, self.text, self.root, self.say = spec, text, root, say
        self.run: RunDir | None = None

    def execute(self) -> RunDir:
        run = self.run = RunDir.create(self.root, self.spec.name)
        return run_spec(self.spec, self.text, run, self.say)


def run_spec(spec: TimeitSpec, text: str, run: RunDir, say: Callable[[str], None]) -> RunDir:
    """Time the command ``repetitions`` times into the new results directory ``run``."""
    run.spec_file.write_text(text, encoding="utf-8")
    run.update_experiment(
        id=run.id,
        name=spec.name,
        kind=KIND,
        created=now_iso(),
        status="running",
        command=spec.command,
        repetitions=spec.repetitions,
        spec_hash=hashlib.sha256(text.encode()).hexdigest()[:16],
    )
    status, error = "complete", None
    try:
        with (run.path / TIMINGS_FILE).open("a", encoding="utf-8") as out:
            for i in range(spec.repetitions):
                t0 = time.perf_counter_ns()
                done = subprocess.run(
                    spec.command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    check=False,
                )
                wall = (time.perf_counter_ns() - t0) / 1e9
                row = {"i": i, "wall_s": wall, "returncode": done.returncode, "at": now_iso()}
                out.write(json.dumps(row) + "\n")
                out.flush()  # each timing is on disk as it happens
                say(f"  {i + 1}/{spec.repetitions}: {wall * 1e3:.2f} ms")
    except OSError as exc:  # the command cannot be started
        status, error = "failed", f"{spec.command[0]}: {exc.strerror or exc}"
    except KeyboardInterrupt:
        run.update_experiment(status="aborted", ended=now_iso())
        raise
    run.update_experiment(status=status, ended=now_iso(), **({"error": error} if error else {}))
    return run


def cmd_run(args: argparse.Namespace, ui: Ui) -> int:
    spec, text = load_spec(Path(args.spec))
    run = TimeitRunner(spec, text, ui.results_root(args), ui.console.print).execute()
    ui.console.print(f"results: [cyan]{run.path}[/]")
    return ui.analyze_and_show(run.path)


#: ``gridbench timeit run SPEC [--results DIR]``, declared: gridbench builds its --help from
#: this and calls ``cmd_run`` only when the command runs
COMMANDS = Commands(
    KIND,
    (
        Command(
            "timeit",
            help="time a local command N times (a plugin family)",
            dest="timeit_action",
            actions=(
                Command(
                    "run",
                    help="run a timeit spec, then analyse and report",
                    run="gridbench_timeit.family:cmd_run",
                    args=(arg("spec", help="the spec YAML"), RESULTS),
                ),
            ),
        ),
    ),
)


# -- analysis ----------------------------------------------------------------------------
def read_timings(run: RunDir) -> tuple[list[dict[str, Any]], int]:
    """The recorded rows (foreign input: bad lines are counted, not fatal)."""
    path = run.path / TIMINGS_FILE
    rows: list[dict[str, Any]] = []
    bad = 0
    if not path.is_file():
        return rows, bad
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
            wall = float(row["wall_s"])
            code = int(row["returncode"])
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        if not math.isfinite(wall) or wall < 0:
            bad += 1
            continue
        rows.append({"i": int(row.get("i", len(rows))), "wall_s": wall, "returncode": code})
    return rows, bad


def wall_stats(walls: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, sd, min, max and p50 of the wall times (None where undefined)."""
    n = len(walls)
    return {
        "n": n,
        "mean": statistics.fmean(walls) if n else None,
        "sd": statistics.stdev(walls) if n >= 2 else None,
        "min": min(walls) if n else None,
        "max": max(walls) if n else None,
        "p50": statistics.median(walls) if n else None,
    }


def analyze(run: RunDir) -> dict[str, Any]:
    exp = run.read_experiment()
    rows, bad = read_timings(run)
    walls = [r["wall_s"] for r in rows]
    planned = exp.get("repetitions")
    failures = sum(1 for r in rows if r["returncode"] != 0)
    reasons = []
    if not isinstance(planned, int) or len(rows) != planned:
        reasons.append(f"{len(rows)} of {planned} repetitions were timed")
    if failures:
        reasons.append(f"the command failed {failures} time(s)")
    if bad:
        reasons.append(f"{bad} line(s) of {TIMINGS_FILE} could not be read")
    metrics: dict[str, Any] = {
        "schema": SCHEMA,
        "experiment": exp.get("name"),
        "status": exp.get("status"),
        "command": exp.get("command"),
        "repetitions": planned,
        "wall_s": wall_stats(walls),
        "samples_s": walls,
        "failures": failures,
        "bad_lines": bad,
        "validity": {"valid": not reasons, "reasons": reasons},
        "thresholds": [],
    }
    _, spec = run.read_spec()
    wanted = spec.get("thresholds") if isinstance(spec, Mapping) else None
    if isinstance(wanted, list) and wanted:
        scopes = {_thresholds.DEFAULT_SCOPE: _thresholds.single(metrics, "run")}
        metrics["thresholds"] = _thresholds.evaluate_thresholds(wanted, scopes)
    write_json(run.metrics_file, metrics)
    return metrics


# -- report ------------------------------------------------------------------------------
def _ms(v: Any) -> str:
    return "–" if v is None else f"{float(v) * 1e3:.3f} ms"


def build_report(run: RunDir, metrics: Mapping[str, Any]) -> Report:
    wall = metrics.get("wall_s") if isinstance(metrics.get("wall_s"), Mapping) else {}
    assert isinstance(wall, Mapping)
    command = metrics.get("command") or []
    cmdline = shlex.join(str(c) for c in command) if isinstance(command, list) else str(command)
    validity = metrics.get("validity") or {}
    findings = [
        Finding(
            "info",
            f"'{cmdline}' took {_ms(wall.get('p50'))} (median of {wall.get('n', 0)} runs)",
        )
    ]
    for t in metrics.get("thresholds") or []:
        findings.append(
            Finding(
                "pass" if t.get("passed") else "fail",
                f"threshold {t.get('metric')} {t.get('op')} {t.get('value')}: "
                + ("passed" if t.get("passed") else str(t.get("reason"))),
            )
        )
    for reason in validity.get("reasons") or []:
        findings.append(Finding("warn", reason))
    if not any(f.status in ("fail", "warn") for f in findings):
        findings.append(Finding("pass", "every repetition was timed and exited 0"))
    table = Table(
        id="wall_time",
        title="Wall time per repetition",
        columns=(Column("statistic"), Column("seconds", "wall time (s)", numeric=True)),
        rows=tuple((k, wall.get(k)) for k in ("n", *STATS)),
    )
    samples = list(metrics.get("samples_s") or [])
    chart = Chart(
        id="wall_time_chart",
        title="Wall time of each repetition",
        figure={
            "data": [
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": "wall time",
                    "x": list(range(1, len(samples) + 1)),
                    "y": samples,
                }
            ],
            "layout": {
                "xaxis": {"title": {"text": "repetition"}},
                "yaxis": {"title": {"text": "wall time (s)"}},
            },
        },
    )
    spec_yaml, _ = run.read_spec()
    summary = EvaluationSummary(
        tested=(("command", cmdline), ("repetitions", str(metrics.get("repetitions")))),
        spec_yaml=spec_yaml,
        plan=None,
        outcome=tuple(findings),
        left_open=("nothing but wall time is measured (no CPU or memory)",),
    )
    return Report(
        family=KIND,
        title=f"timeit: {metrics.get('experiment')}",
        headline=Headline(f"Timing of {cmdline}", tuple(findings)),
        summary=summary,
        sections=(table, chart),
    )


class Timeit:
    """The timeit family."""

    name = KIND
    title = "wall time of a local command, repeated"
    schema = SCHEMA
    validity_rules = (
        ValidityRule("complete", "every planned repetition was timed"),
        ValidityRule("exit_zero", "the command exited 0 every time"),
    )

    def add_commands(self, sub: argparse._SubParsersAction[Any], ui: Ui) -> None:
        COMMANDS.add_commands(sub, ui)

    def analyze(self, run: RunDir) -> dict[str, Any]:
        return analyze(run)

    def report(self, run: RunDir, metrics: Mapping[str, Any]) -> Report:
        return build_report(run, metrics)

    def exit_code(self, metrics: Mapping[str, Any]) -> int:
        status = metrics.get("status")
        if status == "failed":
            return EXIT_BACKEND
        if status == "aborted":
            return EXIT_INTERRUPTED
        failed = any(not t.get("passed") for t in metrics.get("thresholds") or [])
        return EXIT_THRESHOLD if failed or metrics.get("failures") else EXIT_OK

    def verdict(self, metrics: Mapping[str, Any]) -> str:
        code = self.exit_code(metrics)
        return {EXIT_OK: "pass", EXIT_THRESHOLD: "fail"}.get(code, str(metrics.get("status")))

    def catalogue(self, experiment: Mapping[str, Any]) -> CatalogueEntry:
        command = experiment.get("command")
        target = (
            shlex.join(str(c) for c in command) if isinstance(command, list) else str(command or "")
        )
        reps = experiment.get("repetitions")
        return CatalogueEntry(
            target=target or "?",
            variant=f"{reps} repetitions",
            # its own column of the dashboard's list, and its spec's hash searchable there
            columns=(CatalogueColumn("reps", str(reps), numeric=True),),
            search=(str(experiment.get("spec_hash", "")),),
        )

    def runner_for(self, text: str, root: Path) -> TimeitRunner:
        """``StartsFromSpec``: the dashboard's /start offers timeit runs."""
        return TimeitRunner(parse_spec(text, "spec"), text, root, say=lambda _: None)

    def web_pages(self, web: WebContext) -> Pages:
        """``WebPages``: a page of the plugin's own in the dashboard (``/timeit``)."""
        from gridbench_timeit.pages import pages  # FastAPI loads only with a dashboard

        return pages(web)

    def figures(self, run: RunDir, metrics: Mapping[str, Any]) -> list[Figure]:
        samples = metrics.get("samples_s")
        if not isinstance(samples, list):
            raise ResultsError(
                "metrics.json has no samples_s list", where=str(run.metrics_file),
                fix=f"re-analyse it: gridbench analyze {run.path}",
            )  # fmt: skip
        return [
            Figure(
                FIGURE_KEY,
                "wall time",
                "s",
                tuple(float(x) for x in samples),
                higher_is_better=False,
            )
        ]


FAMILY = Timeit()

__all__ = ["FAMILY", "SCHEMA", "Timeit"]
