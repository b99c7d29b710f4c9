"""io's report tables of verdicts and caveats, as typed sections: consistency checks,
thresholds, the cache mode per target, validity flags and fio's run times. Raw values for
CSV/JSON, io's usual text (PASS/FAIL/NOT RUN) for people; a table with nothing to show is
None. The figure tables are in :mod:`gridbench.io.report_tables`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.hosts.sampling.compared import CLIENT_BOUND
from gridbench.io.matrix import LABEL
from gridbench.io.report_tables import MISSING, as_str, fixed, num, status_of, verdict
from gridbench.sections import Column, Field, RecordLook, Shown, Table, record_table


def _verdict(ok: object) -> Shown:
    """A check's verdict: PASS, FAIL or NOT RUN, its status; raw the bool (None not run)."""
    return Shown(ok if isinstance(ok, bool) else None, verdict(ok), status_of(ok))


CONSISTENCY: tuple[Field, ...] = (
    (Column("target"), lambda c: str(c.get("target"))),
    (Column("check"), lambda c: str(c.get("check"))),
    (Column("ok", "result"), lambda c: _verdict(c.get("ok"))),
    (Column("seconds", numeric=True), lambda c: fixed(num(c.get("seconds")), ".3f")),
    (Column("detail"), lambda c: str(c.get("detail", ""))),
)


def consistency_table(metrics: Mapping[str, Any]) -> Table | None:
    """Each consistency or functional check: PASS, FAIL or NOT RUN, its time, its detail."""
    return record_table(
        "consistency",
        "Consistency and functional checks",
        [c for c in metrics.get("consistency", []) if isinstance(c, Mapping)],
        CONSISTENCY,
        look=RecordLook(status=lambda c: status_of(c.get("ok"))),
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
    return record_table(
        "thresholds",
        "Thresholds",
        threshold_entries(metrics),
        [
            (Column("test"), lambda t: t[0]),
            (Column("target"), lambda t: t[1]),
            (Column("ok", "result"), lambda t: _verdict(t[2])),
            (Column("detail"), lambda t: t[3]),
        ],
        look=RecordLook(status=lambda t: status_of(t[2])),
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
    if f.get("rule") == CLIENT_BOUND:  # a host over a step, not a figure
        return f"{f.get('host')} during {f.get('phase')}"
    test = LABEL.get(str(f.get("test")), str(f.get("test")))
    if f.get("kind") == "concurrency":
        test += f" ({f.get('clients')} clients)"
    return test


def _resolution(f: Mapping[str, Any]) -> Shown:
    res = num(f.get("resolution"))
    return Shown(
        res,
        MISSING if res is None else (f"{res:.1%}" if f.get("rule") == "short_runtime" else MISSING),
    )


VALIDITY: tuple[Field, ...] = (
    (Column("rule"), as_str("rule")),
    (Column("target"), as_str("target")),
    (Column("test"), lambda f: Shown(f.get("test"), _what(f))),
    (
        Column("clients", numeric=True),
        lambda f: Shown(f.get("clients"), str(f.get("clients", MISSING))),
    ),
    (
        Column("runtime_ms", "shortest run time ms", numeric=True),
        lambda f: fixed(num(f.get("runtime_ms")), "g"),
    ),
    (Column("resolution", "resolution (1 ms / run time)", numeric=True), _resolution),
    (Column("detail"), lambda f: Shown(f.get("detail"), str(f.get("detail", "")))),
)


def validity_table(metrics: Mapping[str, Any]) -> Table | None:
    """Every validity flag: the rule, the figure it concerns, the run time and the
    resolution (short_runtime), and why."""
    return record_table(
        "validity",
        "Validity flags",
        _flags(metrics),
        VALIDITY,
        note="docs/io.md, 'Validity rules': why a flagged figure is not a storage figure.",
        look=RecordLook(status=lambda _: "warn"),
    )


RUNTIMES: tuple[Field, ...] = (
    (Column("kind"), as_str("kind")),
    (Column("target"), as_str("target")),
    (
        Column("test"),
        lambda g: Shown(g.get("test"), LABEL.get(str(g.get("test")), str(g.get("test")))),
    ),
    (Column("clients", numeric=True), as_str("clients")),
    (Column("direction"), as_str("direction")),
    (
        Column("runtime_ms", "shortest ms", numeric=True),
        lambda g: fixed(num(g.get("runtime_ms")), "g"),
    ),
    (
        Column("runtime_ms_max", "longest ms", numeric=True),
        lambda g: fixed(num(g.get("runtime_ms_max")), "g"),
    ),
    (Column("resolution", numeric=True), lambda g: fixed(num(g.get("resolution")), ".2%")),
)


def runtime_table(metrics: Mapping[str, Any]) -> Table | None:
    """Per figure the shortest and longest fio run time and the resulting resolution
    (the evidence of the short_runtime rule), folded away in the full report."""
    v = metrics.get("validity")
    groups = v.get("runtimes") if isinstance(v, Mapping) else None
    if not isinstance(groups, list):
        return None
    limit = num(v.get("max_resolution")) if isinstance(v, Mapping) else None
    return record_table(
        "runtimes",
        "fio run times and resolution",
        [g for g in groups if isinstance(g, Mapping)],
        RUNTIMES,
        note="fio times a job in whole ms: a figure is good to 1 ms / run time"
        + (f"; above {limit:.0%} it is flagged" if limit is not None else ""),
        look=RecordLook(
            status=lambda g: (
                "warn"
                if limit is not None
                and (num(g.get("resolution")) is None or (g.get("resolution") or 0) > limit)
                else None
            )
        ),
        scope="full",
        collapsed=True,
    )
