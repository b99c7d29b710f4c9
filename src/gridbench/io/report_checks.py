"""io's report tables of verdicts and caveats, as typed sections: consistency checks,
thresholds, the cache mode per target, validity flags and fio's run times. Raw values for
CSV/JSON, io's usual text (PASS/FAIL/NOT RUN) for people; a table with nothing to show is
None. The figure tables are in :mod:`gridbench.io.report_tables`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.io.matrix import LABEL
from gridbench.io.report_tables import MISSING, num, status_of, verdict
from gridbench.sections import Cell, Column, Table


def consistency_table(metrics: Mapping[str, Any]) -> Table | None:
    """Each consistency or functional check: PASS, FAIL or NOT RUN, its time, its detail."""
    checks = [c for c in metrics.get("consistency", []) if isinstance(c, Mapping)]
    if not checks:
        return None
    rows: list[tuple[Cell, ...]] = []
    text: list[tuple[str, ...]] = []
    for c in checks:
        secs = num(c.get("seconds"))
        ok = c.get("ok")
        rows.append(
            (
                str(c.get("target")),
                str(c.get("check")),
                ok if isinstance(ok, bool) else None,
                secs,
                str(c.get("detail", "")),
            )
        )
        text.append(
            (
                str(c.get("target")),
                str(c.get("check")),
                verdict(ok),
                MISSING if secs is None else f"{secs:.3f}",
                str(c.get("detail", "")),
            )
        )
    return Table(
        id="consistency",
        title="Consistency and functional checks",
        columns=(
            Column("target"),
            Column("check"),
            Column("ok", "result"),
            Column("seconds", numeric=True),
            Column("detail"),
        ),
        rows=tuple(rows),
        text=tuple(text),
        row_status=tuple(status_of(c.get("ok")) for c in checks),
        cell_status=tuple((None, None, status_of(c.get("ok")), None, None) for c in checks),
    )


def threshold_entries(metrics: Mapping[str, Any]) -> list[tuple[str, str, bool, str]]:
    """(test, target, ok, detail) of each evaluated threshold. Reads io's own results
    (test, target, ok, detail) and the core evaluator's (metric, where, passed, actual,
    op, value, reason) alike."""
    out = []
    for t in metrics.get("thresholds", []):
        if not isinstance(t, Mapping):
            continue
        ok = t.get("ok", t.get("passed"))
        detail = t.get("detail")
        if detail is None:
            actual = t.get("actual")
            detail = (
                f"{'not measured' if actual is None else f'{actual:.4g}'} "
                f"{t.get('op', '')} {t.get('value', '')}".strip()
            )
            if t.get("reason"):
                detail += f": {t['reason']}"
        target = t.get("target", t.get("where", t.get("point")))
        out.append((str(t.get("test", t.get("metric"))), str(target), ok is True, str(detail)))
    return out


def threshold_table(metrics: Mapping[str, Any]) -> Table | None:
    """Each threshold against each matrix entry it applies to: PASS or FAIL, the value."""
    ths = threshold_entries(metrics)
    if not ths:
        return None
    return Table(
        id="thresholds",
        title="Thresholds",
        columns=(Column("test"), Column("target"), Column("ok", "result"), Column("detail")),
        rows=tuple((test, target, ok, detail) for test, target, ok, detail in ths),
        text=tuple((test, target, verdict(ok), detail) for test, target, ok, detail in ths),
        row_status=tuple(status_of(ok) for *_, ok, _ in ths),
        cell_status=tuple((None, None, status_of(ok), None) for *_, ok, _ in ths),
    )


def cache_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per target: the cache mode requested and used, re-read against read, notes."""
    targets = [t for t in metrics.get("targets", []) if isinstance(t, Mapping)]
    if not targets:
        return None
    effect = {c["target"]: c["statement"] for c in metrics.get("cache_effects", [])}
    text = tuple(
        (
            str(t.get("name")),
            str(t.get("path")),
            str(t.get("cache_requested")),
            str(t.get("cache_used")),
            effect.get(str(t.get("name")), MISSING),
            "; ".join(str(n) for n in t.get("notes", [])) or MISSING,
        )
        for t in targets
    )
    return Table(
        id="cache",
        title="Cache mode per target",
        columns=tuple(
            Column(k, label)
            for k, label in (
                ("target", ""),
                ("path", ""),
                ("cache_requested", "cache requested"),
                ("cache_used", "cache used"),
                ("reread_vs_read", "re-read vs read"),
                ("notes", ""),
            )
        ),
        rows=text,
        text=text,
    )


# -- validity --------------------------------------------------------------------------


def _flags(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    v = metrics.get("validity")
    flags = v.get("flags") if isinstance(v, Mapping) else None
    return [f for f in flags if isinstance(f, Mapping)] if isinstance(flags, list) else []


def _what(f: Mapping[str, Any]) -> str:
    test = LABEL.get(str(f.get("test")), str(f.get("test")))
    if f.get("kind") == "concurrency":
        test += f" ({f.get('clients')} clients)"
    return test


def validity_table(metrics: Mapping[str, Any]) -> Table | None:
    """Every validity flag: the rule, the figure it concerns, the run time and the
    resolution (short_runtime), and why."""
    flags = _flags(metrics)
    if not flags:
        return None
    rows: list[tuple[Cell, ...]] = []
    text: list[tuple[str, ...]] = []
    for f in flags:
        ms, res = num(f.get("runtime_ms")), num(f.get("resolution"))
        rows.append(
            (
                f.get("rule"),
                f.get("target"),
                f.get("test"),
                f.get("clients"),
                ms,
                res,
                f.get("detail"),
            )
        )
        text.append(
            (
                str(f.get("rule")),
                str(f.get("target")),
                _what(f),
                str(f.get("clients", MISSING)),
                MISSING if ms is None else f"{ms:g}",
                MISSING
                if res is None
                else (f"{res:.1%}" if f.get("rule") == "short_runtime" else MISSING),
                str(f.get("detail", "")),
            )
        )
    return Table(
        id="validity",
        title="Validity flags",
        columns=(
            Column("rule"),
            Column("target"),
            Column("test"),
            Column("clients", numeric=True),
            Column("runtime_ms", "shortest run time ms", numeric=True),
            Column("resolution", "resolution (1 ms / run time)", numeric=True),
            Column("detail"),
        ),
        rows=tuple(rows),
        text=tuple(text),
        note="docs/io.md, 'Validity rules': why a flagged figure is not a storage figure.",
        row_status=tuple("warn" for _ in flags),
    )


def runtime_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per figure the shortest and longest fio run time and the resulting resolution
    (the evidence of the short_runtime rule), folded away in the full report."""
    v = metrics.get("validity")
    groups = v.get("runtimes") if isinstance(v, Mapping) else None
    if not isinstance(groups, list) or not groups:
        return None
    gs: Sequence[Mapping[str, Any]] = [g for g in groups if isinstance(g, Mapping)]
    limit = num(v.get("max_resolution")) if isinstance(v, Mapping) else None
    return Table(
        id="runtimes",
        title="fio run times and resolution",
        columns=(
            Column("kind"),
            Column("target"),
            Column("test"),
            Column("clients", numeric=True),
            Column("direction"),
            Column("runtime_ms", "shortest ms", numeric=True),
            Column("runtime_ms_max", "longest ms", numeric=True),
            Column("resolution", numeric=True),
        ),
        rows=tuple(
            (
                g.get("kind"),
                g.get("target"),
                g.get("test"),
                g.get("clients"),
                g.get("direction"),
                num(g.get("runtime_ms")),
                num(g.get("runtime_ms_max")),
                num(g.get("resolution")),
            )
            for g in gs
        ),
        text=tuple(
            (
                str(g.get("kind")),
                str(g.get("target")),
                LABEL.get(str(g.get("test")), str(g.get("test"))),
                str(g.get("clients")),
                str(g.get("direction")),
                f"{g.get('runtime_ms'):g}" if num(g.get("runtime_ms")) is not None else MISSING,
                f"{g.get('runtime_ms_max'):g}"
                if num(g.get("runtime_ms_max")) is not None
                else MISSING,
                MISSING if num(g.get("resolution")) is None else f"{g['resolution']:.2%}",
            )
            for g in gs
        ),
        note="fio times a job in whole ms: a figure is good to 1 ms / run time"
        + (f"; above {limit:.0%} it is flagged" if limit is not None else ""),
        row_status=tuple(
            "warn"
            if limit is not None
            and (num(g.get("resolution")) is None or (g.get("resolution") or 0) > limit)
            else None
            for g in gs
        ),
        scope="full",
        collapsed=True,
    )
