"""``gridbench collect RUN``: fetch the agents' own logs and merge them into the trials.

After a controller crash the agents' logs (each on its host, written as the agent went) hold
events the controller never pulled. ``experiment.json``'s ``agents.logs`` says where each
is: a path under the run for local processes, a path under the agent's home for hosts and
a scheduler's workers. Collect copies each log into ``RUN/agents/<agent>/<trial>.events.csv``
(``.arrows`` for a columnar agent log; locally, or with ``scp`` over the ssh settings of the
spec for another host), then appends to the trial's event log (``events.arrows``, or an
older run's ``events.csv``) the rows it lacks. A row is identified by (job, stage, t_ns,
agent), so collecting twice adds nothing, and nothing already there is changed or removed.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.errors import GridbenchError
from gridbench.jobflow.events.columnar import ARROW_SUFFIX, ArrowEventLog
from gridbench.jobflow.events.log import EVENTS_FILE, EventLog
from gridbench.jobflow.events.model import EVENT_COLUMNS
from gridbench.jobflow.events.run_folder import JobFlowRun
from gridbench.jobflow.events.trial_log import read_event_log, trial_log_path
from gridbench.store.layout import RunDir, atomic_output, read_json, write_json
from gridbench.store.safe_open import open_append

KEY = ["job", "stage", "t_ns", "agent"]
SCP_TIMEOUT_S = 120


@dataclass
class CollectReport:
    """What collect fetched and merged, per trial and agent."""

    added: dict[str, int] = field(default_factory=dict)  # trial -> rows appended
    fetched: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _scp_argv(host: str, remote: str, dest: Path, ssh: dict[str, Any]) -> list[str]:
    """scp's argv for the asyncssh connect options the spec gave SSHCluster."""
    argv = ["scp", "-q", "-o", "BatchMode=yes"]
    if ssh.get("port"):
        argv += ["-P", str(int(ssh["port"]))]
    keys = ssh.get("client_keys")
    for key in [keys] if isinstance(keys, str) else keys or []:
        argv += ["-i", str(key)]
    known = ssh.get("known_hosts")
    if known is None and "known_hosts" in ssh:
        argv += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
    elif isinstance(known, str):  # the file asyncssh checked (a lab's inventory names one)
        argv += ["-o", f"UserKnownHostsFile={known}"]
    user = ssh.get("username")
    target = f"{user}@{host}" if user else host
    return [*argv, "--", f"{target}:{remote}", str(dest)]


def _fetch(run: RunDir, kind: str, where: dict[str, Any], dest: Path, ssh: dict[str, Any]) -> str:
    """Copy one agent's log to ``dest``; returns where it came from."""
    path = str(where.get("path") or "")
    host = str(where.get("host") or "")
    if not path or ".." in Path(path).parts:
        raise GridbenchError(
            f"agent log path {path!r} is not one gridbench writes",
            where=str(run.experiment_file),
            fix="restore experiment.json's agents.logs from the run",
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    if kind == "hosts":  # over ssh to the host as the spec names it
        host = str(where.get("ssh_host") or host)
    elif kind == "processes" or host == socket.gethostname():
        home = Path(str(where.get("home") or Path.home()))
        src = Path(path) if Path(path).is_absolute() else home / path
        if kind == "processes" and not _within(src, run.path / "agents"):
            raise GridbenchError(
                f"agent log {src} is outside the run",
                where=str(run.experiment_file),
                fix="a local agent's log is under RUN/agents/; restore experiment.json",
            )
        if not stat.S_ISREG(os.stat(src).st_mode):  # a device or FIFO would fill the disk
            raise GridbenchError(
                f"agent log {src} is not a regular file",
                where=str(run.experiment_file),
                fix="an agent writes its log as a file: restore experiment.json's agents.logs",
            )
        if src.resolve() != dest.resolve():
            with atomic_output(dest) as tmp:  # never through a link planted in the run
                shutil.copyfile(src, tmp)
        return str(src)
    with atomic_output(dest) as tmp:  # scp follows a link: it writes a private name
        argv = _scp_argv(host, path, tmp, ssh)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SCP_TIMEOUT_S)
        if done.returncode != 0:
            raise GridbenchError(
                f"scp of {host}:{path} failed: {done.stderr.strip()[-300:]}",
                where=f"agent on {host}",
                fix="check that the host is reachable over ssh with the spec's ssh_options",
            )
    return f"{host}:{path}"


def merge_logs(trial_dir: Path, agent_logs: list[Path]) -> int:
    """Append to the trial's event log the rows of ``agent_logs`` it lacks; rows added.

    Either format on either side (CSV or columnar agent logs; the trial's log keeps its
    own format, a trial without one gets the agents' format). The trial's own rows are
    read once (their keys only) and the missing rows appended in one write: one record
    batch, or CSV rows after the log's torn tail (if any) is dropped as the event log does."""
    theirs = pl.concat([read_event_log(p) for p in agent_logs]) if agent_logs else None
    if theirs is None or not theirs.height:
        return 0
    events = trial_log_path(trial_dir)
    mine = read_event_log(events, columns=KEY) if events is not None else theirs.clear().select(KEY)
    missing = theirs.unique(KEY, maintain_order=True).join(mine.unique(), on=KEY, how="anti")
    if not missing.height:
        return 0
    columnar = all(p.name.endswith(ARROW_SUFFIX) for p in agent_logs)
    if (events is None and columnar) or (events is not None and events.suffix == ARROW_SUFFIX):
        with ArrowEventLog(events or trial_dir / ("events" + ARROW_SUFFIX)) as log:
            log.write_frame(missing)
        return missing.height
    events = events or trial_dir / EVENTS_FILE
    EventLog(events).close()  # the header of a new log; a torn last line dropped
    with open_append(events) as fh:  # never through a link planted in the run
        missing.select(EVENT_COLUMNS).write_csv(fh, include_header=False)
        fh.flush()
        os.fsync(fh.fileno())
    return missing.height


def _note_offsets(trial_dir: Path, log: pl.DataFrame, agent: str) -> None:
    """A trial whose controller died before the end has no agents record: the offset each
    agent applied is in its events."""
    path = trial_dir / "trial.json"
    info = read_json(path) if path.exists() else {}
    if not isinstance(info, dict):
        return
    agents = info.setdefault("agents", {})
    if agent in agents or not log.height:
        return
    agents[agent] = {
        "clock_offset_ns": int(log["clock_offset_ns"][0]),
        "clock_uncertainty_ns": None,
        "collected": True,
    }
    write_json(path, info)


def collect_run(run: RunDir) -> CollectReport:
    """Fetch every agent log the run records and merge it (idempotent, append-only)."""
    exp = run.read_experiment()
    agents = exp.get("agents")
    if not isinstance(agents, dict) or not isinstance(agents.get("logs"), dict):
        raise GridbenchError(
            "this run has no agents' logs to collect",
            where=str(run.experiment_file),
            fix="collect applies to runs whose load.agents is a block (processes, hosts, "
            "scheduler)",
        )
    kind = str(agents.get("kind") or "")
    ssh = agents.get("ssh_options") if isinstance(agents.get("ssh_options"), dict) else {}
    report = CollectReport()
    for tid, per_agent in sorted(agents["logs"].items()):
        trial_dir = JobFlowRun.of(run).trial_dir(str(tid))
        if not isinstance(per_agent, dict) or not trial_dir.is_dir():
            report.errors.append(f"{tid}: not a trial of this run")
            continue
        fetched: list[Path] = []
        for name, where in sorted(per_agent.items()):
            if not str(name).startswith("agent-") or "/" in str(name):
                report.errors.append(f"{tid}: {name!r} is not an agent name")
                continue
            if not isinstance(where, dict):
                report.errors.append(f"{tid} {name}: its entry is not a mapping (path, host)")
                continue
            wpath = str(where.get("path", ""))
            suffix = ARROW_SUFFIX if wpath.endswith(ARROW_SUFFIX) else ".csv"
            dest = run.path / "agents" / str(name) / f"{tid}.events{suffix}"
            try:
                report.fetched.append(_fetch(run, kind, where, dest, dict(ssh or {})))
                _note_offsets(trial_dir, read_event_log(dest, columns=["clock_offset_ns"]), name)
                fetched.append(dest)
            except (GridbenchError, OSError, subprocess.TimeoutExpired) as exc:
                report.errors.append(f"{tid} {name}: {exc}")
        report.added[str(tid)] = merge_logs(trial_dir, fetched)
    return report
