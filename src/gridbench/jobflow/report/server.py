"""Server processes during the trials: their CPU and memory, and the server's CPU per job
beside the client's (the seed's CDA table; issue 14)."""

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


def server_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """One row per trial and server label: CPU mean/max (% of one core), CPU seconds, RSS
    (MiB), and the server's and the client's CPU milliseconds per submitted job."""
    rows: list[Row] = []
    for p, t in all_trials(metrics):
        for label, d in as_dict(t.get("server_resources")).items():
            d = as_dict(d)
            gone = d.get("gone")
            gone = gone if isinstance(gone, list) else []
            rows.append(
                {
                    **trial_head(p, t),
                    "label": str(label),
                    "processes": num(d.get("processes")),
                    "samples": num(d.get("samples")),
                    "cpu_mean_pct": num(d.get("cpu_mean_pct")),
                    "cpu_max_pct": num(d.get("cpu_max_pct")),
                    "cpu_s": num(d.get("cpu_s")),
                    "rss_mean_mib": scaled(d.get("rss_mean_bytes"), 1 / MIB),
                    "rss_max_mib": scaled(d.get("rss_max_bytes"), 1 / MIB),
                    "jobs_submitted": num(d.get("jobs_submitted")),
                    "server_cpu_ms_per_job": scaled(d.get("cpu_s_per_job"), 1e3),
                    "client_cpu_ms_per_job": scaled(d.get("client_cpu_s_per_job"), 1e3),
                    "operations": num(d.get("operations")),
                    "server_cpu_ms_per_op": scaled(d.get("cpu_s_per_op"), 1e3),
                    "client_cpu_ms_per_op": scaled(d.get("client_cpu_s_per_op"), 1e3),
                    "gone_pids": " ".join(str(g) for g in gone),
                }
            )
    return rows


_SERVER = (
    Spec("trial", trial_cell),
    Spec("point", "point"),
    Spec("process", "label"),
    Spec("processes", "processes", True),
    Spec("CPU mean %", "cpu_mean_pct", True),
    Spec("CPU max %", "cpu_max_pct", True),
    Spec("CPU s", "cpu_s", True),
    Spec("RSS max MiB", "rss_max_mib", True),
    Spec("jobs", "jobs_submitted", True),
    Spec("server CPU ms/job", "server_cpu_ms_per_job", True),
    Spec("client CPU ms/job", "client_cpu_ms_per_job", True),
    Spec("operations", "operations", True),
    Spec("server CPU ms/op", "server_cpu_ms_per_op", True),
    Spec("client CPU ms/op", "client_cpu_ms_per_op", True),
    Spec("ended (pids)", "gone_pids"),
)


#: The seed's CDA table: the server's CPU and memory while the client sent it requests.
server_table = TableDef(
    "server-processes",
    "Server processes during the trials",
    server_rows,
    _SERVER,
    note="CPU as % of one core (summed over the processes of a name), sampled every 0.5 s "
    "over the whole trial; CPU s is their integral. 'server CPU ms/job' is that ÷ the jobs "
    "submitted; 'client CPU ms/job' is gridbench's own CPU (with its child processes) ÷ the "
    "same jobs, so a probe that loads its server shows here. 'operations' are a probe's timed "
    "calls (tokens, reservations, status queries ...); 'server/client CPU ms/op' divide the "
    "same CPU seconds by them. 'ended' lists processes that went away during the trial.",
)
