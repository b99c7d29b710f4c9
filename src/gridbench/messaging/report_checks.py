"""net's report tables of verdicts and caveats, as typed sections: the overheads above
the floor, the floor itself per environment, thresholds and validity flags. Raw values for
CSV/JSON, text for people; a table with nothing to show is None. The figure tables are in
:mod:`gridbench.messaging.report_tables`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.messaging.overheads import size_text
from gridbench.messaging.report_tables import cell, fmt4, num, ratio_cell, row_status
from gridbench.sections import (
    Column,
    RecordLook,
    Shown,
    Status,
    Table,
    listed,
    record_table,
    shown_table,
)


def floor_table(metrics: Mapping[str, Any]) -> Table | None:
    """The native floor per environment: sockperf per size, iperf3 per streams and
    direction, and what could not be measured."""
    rows: list[tuple[Any, ...]] = []
    for f in listed(metrics, "floor"):
        env = str(f.get("env"))
        for s in f.get("sockperf", []):
            rtt = s.get("rtt_ms") or {}
            text = (
                f"RTT {fmt4(rtt.get('mean'))} ms (p50 {fmt4(rtt.get('p50'))}, "
                f"p99 {fmt4(rtt.get('p99'))})"
            )
            rows.append(
                (
                    env,
                    "sockperf",
                    size_text(int(s["size_bytes"])),
                    Shown(num(rtt.get("mean")), text),
                    s.get("samples"),
                    "",
                )
            )
        for i in f.get("iperf3", []):
            what = f"-P {i['streams']} {i['direction']}"
            rows.append(
                (
                    env,
                    "iperf3",
                    what,
                    Shown(num(i.get("mb_s")), f"{fmt4(i.get('mb_s'))} MB/s"),
                    None,
                    "",
                )
            )
        for x in f.get("failed", []):
            what = (
                size_text(int(x["size_bytes"]))
                if isinstance(x.get("size_bytes"), int)
                else (
                    f"-P {x.get('streams')} {x.get('direction') or ''}".strip()
                    if x.get("streams")
                    else "all"
                )
            )
            rows.append(
                (
                    env,
                    str(x.get("tool")),
                    what,
                    Shown(None, "not measured", "warn"),
                    None,
                    str(x.get("error")),
                )
            )
    if not rows:
        return None
    cols = (
        Column("env"),
        Column("tool"),
        Column("what", "Size / streams"),
        Column("value", "Floor", numeric=True),
        Column("samples", "Samples", numeric=True),
        Column("error", "Error"),
    )
    return shown_table(
        "floor",
        "The network's floor (native tools, same run)",
        cols,
        rows,
        default=lambda v: "" if v is None else str(v),
        note="sockperf ping-pong RTT per message size; iperf3 -J throughput per stream count "
        "and direction (MB/s = 10^6 B/s).",
    )


def overhead_table(metrics: Mapping[str, Any]) -> Table | None:
    """Every figure above floor_factor times its floor, worst first."""
    return record_table(
        "overheads",
        f"Overheads (figures more than {fmt4(metrics.get('floor_factor'))}× the floor)",
        listed(metrics, "overheads"),
        [
            (Column("pattern"), lambda o: str(o.get("pattern"))),
            (
                Column("name", "Transport / tool"),
                lambda o: str(o.get("transport") or o.get("tool")),
            ),
            (Column("env"), lambda o: str(o.get("env"))),
            (Column("ratio", "Ratio", numeric=True), lambda o: ratio_cell(o.get("ratio"), True)),
            (Column("statement", "Finding"), lambda o: str(o.get("statement"))),
        ],
        look=RecordLook(status=lambda o: row_status(False, True)),
    )


def validity_table(metrics: Mapping[str, Any]) -> Table | None:
    """Each validity flag: rule, where, what."""
    v = metrics.get("validity")
    flags = [f for f in (v.get("flags") or [])] if isinstance(v, Mapping) else []
    return record_table(
        "validity",
        "Validity flags",
        [f for f in flags if isinstance(f, Mapping)],
        [
            (Column("rule"), lambda f: str(f.get("rule"))),
            (Column("pattern"), lambda f: str(f.get("pattern"))),
            (Column("name", "Transport / tool"), lambda f: str(f.get("name"))),
            (Column("env"), lambda f: str(f.get("env"))),
            (Column("at", "At"), lambda f: str(f.get("at") or "")),
            (Column("detail", "Detail"), lambda f: str(f.get("detail") or "")),
        ],
        look=RecordLook(status=lambda f: row_status(False, True)),
    )


def threshold_table(metrics: Mapping[str, Any]) -> Table | None:
    """Each threshold: the path, the limit, the value seen, PASS or FAIL."""

    def verdict(t: Mapping[str, Any]) -> Shown:
        ok = t.get("passed") is True
        return Shown(ok, "PASS" if ok else "FAIL", "pass" if ok else "fail")

    def status(t: Mapping[str, Any]) -> Status:
        return "pass" if t.get("passed") is True else "fail"

    return record_table(
        "thresholds",
        "Thresholds",
        listed(metrics, "thresholds"),
        [
            (Column("metric", "Metric"), lambda t: str(t.get("metric"))),
            (Column("limit", "Limit"), lambda t: f"{t.get('op')} {t.get('value')}"),
            (Column("actual", "Actual", numeric=True), lambda t: cell(t.get("actual"))),
            (Column("passed", "Result"), verdict),
            (Column("reason", "Reason"), lambda t: str(t.get("reason") or "")),
        ],
        look=RecordLook(status=status),
    )


def check_tables(metrics: Mapping[str, Any]) -> list[Table | None]:
    """The floor, thresholds and validity tables, in the report's order."""
    return [floor_table(metrics), threshold_table(metrics), validity_table(metrics)]
