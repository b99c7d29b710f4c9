"""Local agent processes (``load.agents: {processes: N}``): ``dask worker`` processes that
the controller starts itself, each in its own session, against a scheduler in its own
process.

Not a ``LocalCluster``: its nannies end their workers with ``os._exit`` when the controller
dies, so agents could never notice the lost controller and cancel what they submitted. The
tie to the controller is the scheduler's connection (the scheduler lives in the controller's
process, so a kill -9 breaks it at once): the worker closes, waiting (up to
:data:`CLOSE_WAIT_S`) for its running agent, whose heartbeat watchdog stops the load and
cancels; then the process exits, about a heartbeat after the kill. Not ``PR_SET_PDEATHSIG``:
the ``dask worker`` CLI's SIGTERM handler ends the process without waiting for the agent,
which then cancels nothing (measured). A worker still running later (a hung agent) is found
by ``gridbench cleanup`` (:func:`stop_stray_agents`). Each starts with its agent's own
``env`` (an ``LD_PRELOAD`` must be there from the first instruction). They speak TLS with a
throw-away certificate: on a shared submit host, another user who connects to the loopback
port cannot join or run code in the agents.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import psutil

from gridbench.errors import GridbenchError
from gridbench.store.spawned import (
    owned_temp_dir,
    run_children,
    sweep_orphaned,
    wait_gone,
)

CLOSE_WAIT_S = 30  # Dask's default: a closing worker waits this long for its running task
NO_SCHEDULER_S = 60  # a worker that cannot reach the scheduler this long exits
#: Dask's statistical profiler samples the agent's thread every 10 ms, taking the GIL from
#: its submitters each time; nobody reads an agent's profile (its effect on lateness was
#: below this VM's noise when measured)
QUIET_WORKER = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}


#: The variable that names, in a local agent's worker's environment, its agent.
AGENT_ENV = "GRIDBENCH_AGENT"
#: cleanup lets a worker whose controller is gone close by itself this long (its agent
#: misses the heartbeat, 5 s by default, and cancels), then SIGTERM, then SIGKILL
GRACE_S = 10.0
STOP_WAIT_S = 10.0


def stop_stray_agents(run_path: Path, plan: list[str], *, dry_run: bool) -> list[int]:
    """Stop the local agents' workers of the run at ``run_path`` still running (their
    controller is gone): each gets :data:`GRACE_S` to end by itself (its agent cancels),
    then SIGTERM to it alone, then SIGKILL after :data:`STOP_WAIT_S`. Only processes
    provably the run's are touched (:func:`gridbench.store.spawned.run_children`). Returns
    the pids signalled; ``plan`` gets a line for each worker found."""
    strays = run_children(run_path, AGENT_ENV)
    verb = "would stop" if dry_run else "stopping"
    for p, name in strays.items():
        plan.append(
            f"agent {name[:40]}'s dask worker, pid {p.pid}: {verb} (SIGTERM after "
            f"{GRACE_S:g} s to cancel its jobs and exit by itself)"
        )
    if dry_run or not strays:
        return []
    left = wait_gone(list(strays), GRACE_S)
    plan += [f"pid {p.pid} exited by itself" for p in strays if p not in left]
    if left:  # a stopped worker's agent cancels nothing: its jobs are in its own log
        plan.append(
            "then 'gridbench collect RUN' and 'gridbench cleanup RUN' again cancel the jobs "
            "the stopped agents' logs show unfinished"
        )
    for p in left:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    alive = wait_gone(left, STOP_WAIT_S)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
            plan.append(f"pid {p.pid} did not exit within {STOP_WAIT_S:g} s: killed")
    wait_gone(alive, 5)
    return [p.pid for p in left]


#: The start of a TLS folder's name: then the controller's pid, a dash, random letters.
TLS_PREFIX = "gridbench-agents-"


def sweep_stale_tls(tmp: Path | None = None) -> list[Path]:
    """Remove the TLS folders (a key inside) that killed controllers of this user left in
    the temporary directory (each is named after its controller's pid)."""
    return sweep_orphaned(TLS_PREFIX, tmp)


class TlsFiles:
    """A throw-away certificate and key for one cluster's TLS (Dask's ``Security.temporary``:
    one self-signed pair that every party presents and trusts), written to a private
    directory for the workers' command line; removed with :meth:`remove`."""

    def __init__(self, cert_pem: str, key_pem: str) -> None:
        sweep_stale_tls()
        # named after this process, so that a folder left by a killed controller is known
        self.dir = owned_temp_dir(TLS_PREFIX)
        self.cert = self.dir / "cert.pem"
        self.key = self.dir / "key.pem"
        self.scratch = self.dir / "scratch"  # Dask's scratch for the scheduler and workers
        self.cert.write_text(cert_pem)
        fd = os.open(self.key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key_pem)

    def remove(self) -> None:
        """Delete the files (the running workers have loaded them)."""
        shutil.rmtree(self.dir, ignore_errors=True)


class LocalAgents:
    """``dask worker`` processes, one per agent name, with their logs in ``log_dir``."""

    def __init__(self, names: Sequence[str], log_dir: Path | None) -> None:
        self.names = list(names)
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path | None] = {}

    def start(
        self, address: str, envs: Mapping[str, Mapping[str, str]], tls: TlsFiles | None = None
    ) -> None:
        """Start every agent's worker against the scheduler at ``address`` (``tls``: the
        certificate and key files the workers present and trust)."""
        for name in self.names:
            log = None if self.log_dir is None else self.log_dir / name / "worker.log"
            self.logs[name] = log
            argv = [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--name",
                name,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                # the worker still serves /health, /metrics and /sitemap.json over HTTP,
                # without authentication: on loopback only (its default is every address)
                "--dashboard-address",
                "127.0.0.1:0",
                "--host",
                "127.0.0.1",
                "--death-timeout",
                str(NO_SCHEDULER_S),
            ]
            if tls is not None:  # file paths: the key itself never appears in a command line
                argv += ["--tls-ca-file", str(tls.cert), "--tls-cert", str(tls.cert)]
                argv += ["--tls-key", str(tls.key)]
                # Dask's scratch in the same folder, not TMPDIR/dask-scratch-space: what a
                # killed worker leaves is swept with the keys (the fault matrix found it)
                argv += ["--local-directory", str(tls.scratch)]
            env = {**os.environ, **QUIET_WORKER, **envs.get(name, {}), AGENT_ENV: name}
            if log is None:
                self.procs[name] = _spawn(argv, env, subprocess.DEVNULL)
                continue
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "ab") as fh:
                self.procs[name] = _spawn(argv, env, fh)

    def check(self) -> None:
        """Raise, with its log's tail, if an agent's worker has exited."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise GridbenchError(
                    f"agent {name}'s dask worker exited ({proc.returncode}) before it "
                    f"joined:\n{self.tail(name)}",
                    where="load.agents.processes",
                    fix="see the worker's log above; 'gridbench check SPEC' tests the backend",
                )

    def tail(self, name: str, size: int = 2000) -> str:
        """The last ``size`` characters of agent ``name``'s worker log."""
        log = self.logs.get(name)
        if log is None or not log.exists():
            return "(no log)"
        return log.read_bytes()[-size:].decode("utf-8", "replace")

    def terminate(self) -> None:
        """Ask every worker still running to close (SIGTERM: a worker closes gracefully)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()

    def wait(self, timeout_s: float) -> None:
        """Wait for the workers to exit (they do once the scheduler closes); end the ones
        that do not."""
        for proc in self.procs.values():
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _spawn(argv: list[str], env: dict[str, str], out: int | IO[Any]) -> subprocess.Popen[bytes]:
    # its own session: a Ctrl-C at the terminal or a kill of the controller's process
    # group reaches the controller, which stops the agents itself, not the agents directly
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
