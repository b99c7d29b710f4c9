"""A unit as its family's own command: ``gridbench [FAMILY] validate|plan|run SPEC --set
...``, each in a process of its own (the family's exit codes, its checks and its output,
exactly as a user running the unit by hand gets them; a unit that crashes never takes the
campaign with it).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench.campaign.model import Parsed, Unit
from gridbench.store.layout import DEFAULT_ROOT_ENV

#: the command line of this gridbench, in a new process
GRIDBENCH = (sys.executable, "-m", "gridbench.cli")
#: how many units' checks run at once (each is a process of its own)
CHECK_WORKERS = 4
#: units a checking process takes before another is started beside it
UNITS_PER_PROCESS = 8
CHECK_TIMEOUT_S = 300.0


def unit_env(root: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a unit's process: this one's, with the results root when given,
    a wide terminal (lines are not folded in the unit's log) and ``extra``."""
    env = dict(os.environ)
    if root is not None:
        env[DEFAULT_ROOT_ENV] = str(root)
    env.setdefault("COLUMNS", "160")
    env.update(extra)
    return env


def shown(unit: Unit, verb: str | None = None, root: Path | None = None) -> str:
    """The one command that runs ``unit`` by hand (from any folder): into its folder,
    then ``gridbench ...`` with its spec as the campaign names it."""
    argv = unit.argv(verb)
    spec = str(unit.spec_path)
    try:
        rel = str(unit.spec_path.relative_to(unit.base))
    except ValueError:
        rel = spec
    argv = [rel if a == spec else a for a in argv]
    env = f"GRIDBENCH_RESULTS={shlex.quote(str(root))} " if root is not None else ""
    return f"cd {shlex.quote(str(unit.base))} && {env}gridbench {shlex.join(argv)}"


@dataclass(frozen=True)
class Checked:
    """What one of a unit's family commands said."""

    unit: Unit
    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def message(self) -> str:
        """The command's error in its own words ("error: " dropped, lines kept)."""
        text = (self.err.strip() or self.out.strip() or f"exit code {self.code}").splitlines()
        lines = [line.removeprefix("error: ") for line in text if line.strip()]
        return "\n  ".join(lines[-12:])


def _batch(batch: Sequence[tuple[Unit, list[str]]]) -> list[Checked]:
    """Commands run in one process (:mod:`gridbench.campaign.batch`)."""
    jobs = [{"argv": argv, "cwd": str(unit.base)} for unit, argv in batch]
    timeout = CHECK_TIMEOUT_S + 30.0 * len(batch)
    with tempfile.TemporaryDirectory(prefix="gridbench-campaign-") as tmp:
        out = Path(tmp) / "results.json"
        try:
            p = subprocess.run(
                [sys.executable, "-m", "gridbench.campaign.batch", str(out)],
                input=json.dumps(jobs),
                env=unit_env(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            found = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else None
        except subprocess.TimeoutExpired:
            found, p = None, None
        except ValueError:
            found = None
    if not isinstance(found, list) or len(found) != len(batch):
        why = (p.stderr.strip()[-2000:] if p is not None else "") or f"no answer in {timeout:.0f} s"
        return [Checked(u, 2, "", f"the check could not run: {why}") for u, _ in batch]
    return [
        Checked(u, int(r.get("code", 2)), str(r.get("out", "")), str(r.get("err", "")))
        for (u, _), r in zip(batch, found, strict=True)
    ]


def _each(units: Sequence[Unit], argv_of: Any) -> list[Checked]:
    """``argv_of(unit)`` for each unit, as gridbench commands: in a few processes, each
    running its share in turn (the command line's start-up paid once a process)."""
    if not units:
        return []
    todo = [(u, list(argv_of(u))) for u in units]
    n = min(CHECK_WORKERS, max(1, len(todo) // UNITS_PER_PROCESS))
    shares = [todo[i::n] for i in range(n)]
    with ThreadPoolExecutor(max_workers=n) as pool:
        done = list(pool.map(_batch, shares))
    by_key = {c.unit.key: c for share in done for c in share}
    return [by_key[u.key] for u in units]


def validate_units(parsed: Parsed, units: Sequence[Unit]) -> list[str]:
    """Each unit's spec checked by its family (``gridbench [FAMILY] validate SPEC --set
    ...``): one error line per unit that fails, naming the unit's line in the campaign
    file, then the family's own error (the spec's file:line and the fix)."""
    errors = []
    for c in _each(units, lambda u: u.argv("validate")):
        if not c.ok:
            where = f"{parsed.origin}:{c.unit.line}" if c.unit.line else parsed.origin
            errors.append(
                f"{where}: unit {c.unit.key} ({c.unit.family} spec {c.unit.spec.spec}): "
                f"{c.message()}"
            )
    return errors


@dataclass(frozen=True)
class Estimate:
    """What a unit's family plan says of one repetition of it."""

    unit: Unit
    seconds: float | None  # None: the family's plan gives no duration
    plan: dict[str, Any] | None
    note: str = ""

    @property
    def total_seconds(self) -> float | None:
        return None if self.seconds is None else self.seconds * self.unit.spec.repetitions


def plan_units(units: Sequence[Unit]) -> list[Estimate]:
    """Each unit's estimate from its family's plan (``gridbench [FAMILY] plan SPEC --json
    --set ...``)."""
    out = []
    for c in _each(units, lambda u: u.argv("plan", "--json")):
        if not c.ok:
            out.append(Estimate(c.unit, None, None, f"no plan: {c.message()}"))
            continue
        try:
            doc = json.loads(c.out)
        except ValueError:
            out.append(Estimate(c.unit, None, None, "its plan is not JSON"))
            continue
        secs = doc.get("estimated_seconds") if isinstance(doc, dict) else None
        ok = isinstance(secs, int | float) and not isinstance(secs, bool)
        note = "" if ok else "its family's plan gives no duration"
        out.append(Estimate(c.unit, float(secs) if ok and secs is not None else None, doc, note))
    return out
