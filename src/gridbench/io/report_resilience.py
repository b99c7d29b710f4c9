"""The resilience phase in io's report: the headline findings (integrity first: a lost
or corrupt byte is named there), the faults with their effect and recovery, the
integrity check, and throughput and latency over time with a marker at each fault.
Pure functions of ``metrics["resilience"]``; nothing when the phase did not run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from gridbench.plotting import TEMPLATE, figure_data, ptext
from gridbench.sections import Chart, Column, Finding, RecordLook, Section, Table, record_table
from gridbench.units import format_size

#: Bad files named in the headline; the rest are in the integrity table.
NAMED = 5


def _res(metrics: Mapping[str, Any]) -> Mapping[str, Any] | None:
    r = metrics.get("resilience")
    return r if isinstance(r, Mapping) else None


def _s(v: Any, unit: str = " s") -> str:
    return "" if not isinstance(v, int | float) else f"{v:.2f}{unit}"


def findings(metrics: Mapping[str, Any]) -> list[Finding]:
    """Integrity (pass, or fail naming the files), recovery, refused writes."""
    r = _res(metrics)
    if r is None:
        return []
    out = []
    integ = r.get("integrity")
    if not isinstance(integ, Mapping):
        out.append(Finding("fail", "integrity check did not run: the data is not verified"))
    elif integ.get("ok") is True:
        after = "after recovery" if r.get("recoveries") else "after the load"
        out.append(
            Finding(
                "pass",
                f"integrity: all {integ.get('files')} files "
                f"({format_size(int(integ.get('bytes') or 0))}) read back intact {after}",
            )
        )
    else:
        bad = [b for b in integ.get("bad") or [] if isinstance(b, Mapping)]
        named = ", ".join(f"{b.get('file')} {b.get('problem')}" for b in bad[:NAMED])
        more = f" and {len(bad) - NAMED} more" if len(bad) > NAMED else ""
        out.append(
            Finding(
                "fail",
                f"integrity FAILED: {len(bad)} of {integ.get('files')} files "
                f"({format_size(int(integ.get('bad_bytes') or 0))}) lost or corrupt: "
                f"{named}{more}",
            )
        )
    for rec in r.get("recoveries") or []:
        if isinstance(rec, Mapping) and rec.get("ok") is not True:
            out.append(
                Finding(
                    "fail", f"volume not recovered after {rec.get('cause')}: {rec.get('detail')}"
                )
            )
    timed = [
        f"{rec.get('cause')}: healed in {_s(rec.get('healed_s'))}"
        for rec in r.get("recoveries") or []
        if isinstance(rec, Mapping) and rec.get("ok") is True
    ]
    if timed:
        out.append(Finding("info", "time to recover: " + "; ".join(timed)))
    if r.get("write_errors"):
        out.append(
            Finding(
                "warn",
                f"{r.get('write_errors')} write(s) refused during the faults "
                f"(of {int(r.get('writes') or 0) + int(r.get('write_errors') or 0)})",
            )
        )
    if isinstance(r.get("capped_s"), int | float):
        out.append(
            Finding(
                "warn",
                f"the writers reached max_bytes after {r['capped_s']:.1f} s: later faults "
                "hit a volume without load (raise max_bytes or shorten the duration)",
            )
        )
    if r.get("stuck_writers"):
        out.append(Finding("fail", f"writer(s) {r.get('stuck_writers')} never returned"))
    return out


FAULTS = (
    (Column("t", "at s", numeric=True), lambda f: f.get("t")),
    (Column("action"), lambda f: f.get("action")),
    (Column("server"), lambda f: f"{f.get('server')} ({f.get('address')})"),
    (Column("before", "MiB/s before", numeric=True), lambda f: f.get("before_mib_s")),
    (Column("lowest", "lowest MiB/s after", numeric=True), lambda f: f.get("lowest_mib_s")),
    (Column("back", "throughput back after s", numeric=True), lambda f: f.get("throughput_back_s")),
    (Column("p99", "worst p99 ms after", numeric=True), lambda f: f.get("worst_p99_ms")),
    (Column("detail"), lambda f: f.get("detail") or ("ok" if f.get("ok") else "failed")),
)

RECOVERIES = (
    (Column("cause"), lambda r: r.get("cause")),
    (Column("online", "all servers online after s", numeric=True), lambda r: r.get("online_s")),
    (Column("healed", "healed after s", numeric=True), lambda r: r.get("healed_s")),
    (Column("ok"), lambda r: r.get("ok") is True),
    (Column("detail"), lambda r: r.get("detail") or ""),
)

BAD = (
    (Column("file"), lambda b: b.get("file")),
    (Column("problem"), lambda b: b.get("problem")),
    (Column("bytes", numeric=True), lambda b: b.get("bytes")),
)

WRITER_HOSTS = (
    (Column("host"), lambda h: h.get("host")),
    (Column("writes", "files written", numeric=True), lambda h: h.get("writes")),
    (Column("errors", "writes refused", numeric=True), lambda h: h.get("write_errors")),
    (Column("bytes", numeric=True), lambda h: h.get("bytes_written")),
    (Column("mib_s", "MiB/s", numeric=True), lambda h: h.get("mib_s")),
    (Column("lost"), lambda h: h.get("lost") or ""),
)


def _rows(r: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [x for x in r.get(key) or [] if isinstance(x, Mapping)]


def tables(metrics: Mapping[str, Any]) -> list[Table]:
    r = _res(metrics)
    if r is None:
        return []
    interval = r.get("interval")
    out = [
        record_table(
            "resilience-faults",
            "Faults and their effect",
            _rows(r, "faults"),
            FAULTS,
            look=RecordLook(status=lambda f: None if f.get("ok") else "fail"),
            note=f"Throughput in {interval} s bins; 'before' is the mean of the 5 s before the "
            "fault, 'back' the time until a bin reached 80% of it.",
        ),
        record_table(
            "resilience-recovery",
            "Time to recover (servers online, nothing left to heal)",
            _rows(r, "recoveries"),
            RECOVERIES,
            look=RecordLook(status=lambda x: "pass" if x.get("ok") is True else "fail"),
        ),
    ]
    lost = {str(x.get("host")): x.get("detail") for x in _rows(r, "hosts_lost")}
    hosts = [{**h, "lost": lost.get(str(h.get("host")))} for h in _rows(r, "hosts")]
    out.append(
        record_table(
            "resilience-hosts",
            "Writers on client hosts (every file they wrote checked here)",
            hosts,
            WRITER_HOSTS,
            look=RecordLook(status=lambda h: "warn" if h.get("lost") else None),
        )
    )
    integ = r.get("integrity")
    if isinstance(integ, Mapping):
        out.append(
            record_table(
                "resilience-bad-files",
                "Integrity: files lost or corrupt",
                _rows(integ, "bad"),
                BAD,
                look=RecordLook(status=lambda _b: "fail"),
            )
        )
    return [t for t in out if t is not None]


def chart(metrics: Mapping[str, Any]) -> Chart | None:
    """Throughput (bars) and p99 write latency (line, right axis) over time, faults marked."""
    r = _res(metrics)
    s = r.get("series") if r else None
    if r is None or not isinstance(s, Mapping) or not s.get("t"):
        return None
    fig = go.Figure()
    fig.add_bar(x=s["t"], y=s["mib_s"], name="MiB/s written", marker_color="#4c78a8")
    fig.add_scatter(x=s["t"], y=s["p99_ms"], name="p99 write ms", yaxis="y2", mode="lines")
    for f in _rows(r, "faults"):
        if isinstance(f.get("t"), int | float):
            fig.add_vline(x=f["t"], line_dash="dash", line_color="#e45756")
            fig.add_annotation(
                x=f["t"],
                y=1,
                yref="paper",
                text=ptext(f"{f.get('action')} {f.get('server')}"),
                showarrow=False,
                textangle=-90,
                xanchor="right",
            )
    fig.update_layout(
        template=TEMPLATE,
        xaxis_title="seconds into the load",
        yaxis_title="MiB/s",
        yaxis2={"title": "p99 ms per file", "overlaying": "y", "side": "right"},
        height=420,
    )
    return Chart(
        id="resilience-overtime",
        title="Throughput and latency around the faults",
        figure=figure_data(fig),
        note=f"Files written and fsynced per {r.get('interval')} s bin (by completion), and "
        "the p99 time to write one file; dashed lines: faults.",
    )


def sections(metrics: Mapping[str, Any]) -> list[Section]:
    """Every resilience section with data, in the report's order."""
    c = chart(metrics)
    return [*tables(metrics), *([c] if c is not None else [])]
