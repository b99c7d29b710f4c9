"""Data staging beside latency: per trial, each timed transfer's bytes, files and rate
(the ``staging`` block analysis writes when a backend timed its transfers); the chart is
:mod:`gridbench.jobflow.report.staging_chart`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gridbench.jobflow.report.build import Spec, TableDef, trial_cell
from gridbench.jobflow.report.model import (
    MIB,
    Row,
    all_trials,
    as_dict,
    num,
    scaled,
    trial_head,
)


def staging_rows(metrics: Mapping[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for p, t in all_trials(metrics):
        for kind, d in as_dict(t.get("staging")).items():
            d = as_dict(d)
            rows.append(
                {
                    **trial_head(p, t),
                    "transfer": str(kind),
                    "jobs": num(d.get("jobs")),
                    "mib_total": scaled(d.get("bytes_total"), 1 / MIB),
                    "kib_p50": scaled(d.get("bytes_p50"), 1 / 1024),
                    "files_p50": num(d.get("files_p50")),
                    "rate_p50": scaled(d.get("rate_bps_p50"), 1 / MIB),
                    "rate_min": scaled(d.get("rate_bps_min"), 1 / MIB),
                    "seconds_p50": num(d.get("seconds_p50")),
                    "errors": num(d.get("errors")),
                }
            )
    return rows


staging_table = TableDef(
    "staging",
    "Data staging",
    staging_rows,
    (
        Spec("trial", trial_cell),
        Spec("point", "point"),
        Spec("transfer", "transfer"),
        Spec("jobs", "jobs", True),
        Spec("MiB total", "mib_total", True),
        Spec("KiB/job p50", "kib_p50", True),
        Spec("files/job p50", "files_p50", True),
        Spec("MiB/s p50", "rate_p50", True),
        Spec("MiB/s min", "rate_min", True),
        Spec("s p50", "seconds_p50", True),
        Spec("errors", "errors", True),
    ),
    note="Each job's timed transfers: the reference grid's input upload (stage_in_start → "
    "staged_in) and output download (stage_out_start → staged_out), and the command "
    "backend's upload template, run before submit (upload_start → uploaded), and download "
    "template, run when a status sweep first sees the job done (download_start → "
    "downloaded): the bytes and files moved, bytes ÷ the transfer's own time, and that "
    "time (also in the latency tables).",
)
