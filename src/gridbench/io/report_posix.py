"""io's storage-in-depth report sections: the POSIX conformance table per syscall (the
seed's Table 4.7, with each target's difference to the baseline), the failed cases and
the skip reasons, the trace-replay matrix (as the iozone matrix: kB/s mean ±sd and the
signed speedup), and the identity check matrix. A table with nothing to show is None."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gridbench.io.report_tables import MISSING, fixed, fmt_kbps, fmt_speedup, num, status_of
from gridbench.sections import (
    Column,
    Field,
    Finding,
    RecordLook,
    Section,
    Shown,
    Table,
    record_table,
)

ACCESS_OPS = ("read", "write", "list", "traverse")
#: Failed cases shown in the report (all of them are in metrics.json).
MAX_FAILURES = 60


def _pct(x: Any) -> Shown:
    v = num(x)
    return Shown(v, MISSING if v is None else f"{v * 100:.2f}%")


def _diff(r: Mapping[str, Any]) -> Shown:
    """The rate's difference to the baseline in percentage points, and how many cases
    got worse (pass on the baseline, fail here) or better."""
    rate, base = num(r.get("rate")), num(r.get("baseline_rate"))
    if rate is None or base is None:
        return Shown(None, MISSING)
    worse, better = len(r.get("worse") or []), len(r.get("better") or [])
    extra = ", ".join(
        s for s in (f"{worse} worse" if worse else "", f"{better} better" if better else "") if s
    )
    return Shown(rate - base, f"{(rate - base) * 100:+.2f}" + (f" ({extra})" if extra else ""))


def _cell(r: Mapping[str, Any] | None) -> Shown:
    """``passed/run rate%`` with skipped and excluded counts; raw the rate."""
    if r is None:
        return Shown(None, MISSING)
    passed, failed = r.get("passed") or 0, r.get("failed") or 0
    rate = num(r.get("rate"))
    text = f"{passed}/{passed + failed} " + ("-" if rate is None else f"{rate * 100:.2f}%")
    aside = [f"{r[k]} {k[:4]}" for k in ("skipped", "excluded") if r.get(k)]
    return Shown(rate, text + (f" ({', '.join(aside)})" if aside else ""))


Cells = Mapping[tuple[str, str], Mapping[str, Any]]


def _rate_of(cell: Cells, t: str) -> Callable[[str], Shown]:
    return lambda sc: _cell(cell.get((t, sc)))


def _diff_of(cell: Cells, t: str) -> Callable[[str], Shown]:
    return lambda sc: _diff(cell.get((t, sc), {}))


def _conf_rows(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    conf = metrics.get("conformance")
    rows = conf.get("table", []) if isinstance(conf, Mapping) else []
    return [r for r in rows if isinstance(r, Mapping)]


def conformance_table(metrics: Mapping[str, Any]) -> Table | None:
    """The seed's Table 4.7 side by side: one row per syscall, per target the passed of
    run cases and the success rate (skipped and excluded apart), and per non-baseline
    target the difference to the baseline with the cases that got worse."""
    rows = _conf_rows(metrics)
    targets = list(dict.fromkeys(str(r.get("target")) for r in rows))
    syscalls = list(dict.fromkeys(str(r.get("syscall")) for r in rows))
    cell = {(str(r.get("target")), str(r.get("syscall"))): r for r in rows}
    baseline = metrics.get("baseline")
    fields: list[Field] = [(Column("syscall", "system call"), lambda sc: sc)]
    for t in targets:
        fields.append(
            (Column(f"{t}_rate", f"{t} passed (% success)", numeric=True), _rate_of(cell, t))
        )
        if baseline and t != baseline:
            fields.append(
                (Column(f"{t}_vs_baseline", f"{t} vs {baseline}", numeric=True), _diff_of(cell, t))
            )

    def status(sc: str) -> Any:
        if any(cell.get((t, sc), {}).get("worse") for t in targets):
            return "fail"
        return None

    return record_table(
        "conformance",
        "POSIX conformance per system call (pjdfstest)",
        syscalls,
        fields,
        look=RecordLook(status=status),
    )


def _conf_list(metrics: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    conf = metrics.get("conformance")
    items = conf.get(key, []) if isinstance(conf, Mapping) else []
    return [r for r in items if isinstance(r, Mapping)]


def conformance_failures(metrics: Mapping[str, Any]) -> Table | None:
    """Each failed case with pjdfstest's message (the first 60)."""
    return record_table(
        "conformance_failures",
        "POSIX conformance: failed cases",
        _conf_list(metrics, "failures")[:MAX_FAILURES],
        (
            (Column("target"), lambda r: str(r.get("target"))),
            (Column("test", "case"), lambda r: str(r.get("test"))),
            (Column("detail", "message"), lambda r: str(r.get("detail") or "")),
        ),
        look=RecordLook(status=lambda _r: "fail"),
    )


def conformance_skips(metrics: Mapping[str, Any]) -> Table | None:
    """Why cases were skipped or excluded, per target and syscall, with counts."""
    return record_table(
        "conformance_skips",
        "POSIX conformance: skipped and excluded cases",
        _conf_list(metrics, "skip_reasons"),
        (
            (Column("target"), lambda r: str(r.get("target"))),
            (Column("syscall", "system call"), lambda r: str(r.get("syscall"))),
            (Column("reason"), lambda r: str(r.get("reason"))),
            (Column("count", numeric=True), lambda r: r.get("count")),
        ),
    )


def _ms(key: str) -> Any:
    return lambda r: fixed(num((r.get("lat_ms") or {}).get(key)), ".3f")


REPLAY: tuple[Field, ...] = (
    (Column("direction"), lambda r: str(r.get("direction"))),
    (
        Column("sync", "O_SYNC"),
        lambda r: Shown(bool(r.get("sync")), "yes" if r.get("sync") else "no"),
    ),
    (Column("streams", numeric=True), lambda r: r.get("streams")),
    (Column("target"), lambda r: str(r.get("target"))),
    (
        Column("kbps", "kB/s, all streams (mean ±sd)", numeric=True),
        lambda r: Shown(num((r.get("kbps") or {}).get("mean")), fmt_kbps(r.get("kbps"))),
    ),
    (
        Column("speedup", "vs baseline", numeric=True),
        lambda r: Shown(num(r.get("speedup")), fmt_speedup(num(r.get("speedup")))),
    ),
    (Column("p50_ms", "p50 ms", numeric=True), _ms("p50")),
    (Column("p99_ms", "p99 ms", numeric=True), _ms("p99")),
)


def replay_table(metrics: Mapping[str, Any]) -> Table | None:
    """The trace replays: per direction, O_SYNC, streams and target the aggregate kB/s,
    the signed speedup against the baseline and latency percentiles."""
    rows = [r for r in metrics.get("replay", []) if isinstance(r, Mapping)]
    return record_table("replay", "Trace replay (fio I/O log)", rows, REPLAY)


def _verdict(ok: Any) -> Shown:
    return Shown(
        ok if isinstance(ok, bool) else None,
        "PASS" if ok is True else "FAIL" if ok is False else "NOT RUN",
        status_of(ok),
    )


def _access(cell: Mapping[str, Any] | None) -> Shown:
    """yes or no as it happened; in capitals with what the bits say when they differ."""
    if cell is None:
        return Shown(None, MISSING)
    got = str(cell.get("actual"))
    word = {"allowed": "yes", "denied": "no"}.get(got, got)
    if cell.get("ok") is True:
        return Shown(word, word)
    want = {"allowed": "yes", "denied": "no"}.get(str(cell.get("expected")), "?")
    return Shown(word, f"{word.upper()} (bits: {want})", "fail")


def _access_of(cells: Mapping[tuple[str, str, str, str], Any], op: str) -> Any:
    return lambda k: _access(cells.get((*k, op)))


def identity_matrix(metrics: Mapping[str, Any]) -> Table | None:
    """Who can read, write, list and traverse what: one row per target, object and user;
    a cell differing from what the permission bits say is in capitals."""
    rows = [
        c
        for c in metrics.get("identities", [])
        if isinstance(c, Mapping) and c.get("check") == "access"
    ]
    cells = {
        (str(c.get("target")), str(c.get("object")), str(c.get("user")), str(c.get("op"))): c
        for c in rows
    }
    keys = list(dict.fromkeys(k[:3] for k in cells))
    fields: list[Field] = [
        (Column("target"), lambda k: k[0]),
        (Column("object", "directory/file (modes)"), lambda k: k[1]),
        (Column("user", "as user"), lambda k: k[2]),
    ]
    fields += [(Column(op, numeric=False), _access_of(cells, op)) for op in ACCESS_OPS]
    return record_table(
        "identities",
        "Identities: who can read, write, list and traverse what",
        keys,
        fields,
        look=RecordLook(
            status=lambda k: (
                "fail"
                if any(cells.get((*k, op), {}).get("ok") is False for op in ACCESS_OPS)
                else None
            )
        ),
    )


def identity_checks(metrics: Mapping[str, Any]) -> Table | None:
    """The other identity checks: ownership across copy and backup/restore, and the
    "invisible until root visits" case."""
    rows = [
        c
        for c in metrics.get("identities", [])
        if isinstance(c, Mapping) and c.get("check") != "access"
    ]
    return record_table(
        "identity_checks",
        "Identities: ownership and visibility",
        rows,
        (
            (Column("target"), lambda c: str(c.get("target"))),
            (Column("user"), lambda c: str(c.get("user"))),
            (Column("check"), lambda c: str(c.get("check"))),
            (Column("ok", "result"), lambda c: _verdict(c.get("ok"))),
            (Column("detail"), lambda c: str(c.get("detail") or "")),
        ),
        look=RecordLook(status=lambda c: status_of(c.get("ok"))),
    )


def in_depth_sections(metrics: Mapping[str, Any]) -> list[Section | None]:
    """The storage-in-depth sections, in the report's order."""
    return [
        conformance_table(metrics),
        conformance_failures(metrics),
        conformance_skips(metrics),
        replay_table(metrics),
        identity_matrix(metrics),
        identity_checks(metrics),
    ]


def _totals(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    conf = metrics.get("conformance")
    rows = conf.get("table", []) if isinstance(conf, Mapping) else []
    return [r for r in rows if isinstance(r, Mapping) and r.get("syscall") == "total"]


def in_depth_findings(metrics: Mapping[str, Any]) -> list[Finding]:
    """One finding per target's conformance total, and one for failed identity checks."""
    out = []
    for r in _totals(metrics):
        rate = num(r.get("rate"))
        worse = len(r.get("worse") or [])
        text = (
            f"{r.get('target')}: POSIX conformance {rate * 100:.2f}% "
            f"({r.get('passed')} of {(r.get('passed') or 0) + (r.get('failed') or 0)} cases; "
            f"{r.get('skipped')} skipped, {r.get('excluded')} excluded)"
            if rate is not None
            else f"{r.get('target')}: no conformance case ran"
        )
        if worse:
            text += f"; {worse} cases pass on the baseline and fail here"
        # failed cases are a measured result (exit 0), not a failure of the run
        out.append(Finding("warn" if r.get("failed") else "pass", text))
    bad = _failed_identities(metrics.get("identities", []))
    if bad:
        out.append(Finding("fail", f"identity checks failed on {', '.join(bad)}"))
    return out


def _failed_identities(checks: Sequence[Any]) -> list[str]:
    names: list[str] = []
    for c in checks:
        if isinstance(c, Mapping) and c.get("ok") is False and str(c.get("target")) not in names:
            names.append(str(c.get("target")))
    return names
