"""Running a net spec: per environment the native floor, then ping-pong, echo, burst and
transfer, every result appended to ``RUN/records.jsonl`` the moment it exists.

Results directory (the store layout of store/layout.py)::

    RUN/experiment.json    kind: net, status, environments, patterns, floor_factor, notes
    RUN/spec.yaml          the spec as run
    RUN/records.jsonl      one line per test, series, burst, transfer or floor figure
    RUN/processes.jsonl    every process started (pid and start time, for cleanup)
    RUN/resources.jsonl    namespaces, links and qdiscs made (for cleanup)
    RUN/work/              peer logs, certificates, payloads, MUSCLE3's files
    RUN/metrics.json       the analysis (gridbench.messaging.analysis)

A peer that fails mid-test is a failed test with its error; the run restarts the peer and
goes on with the next size. Ctrl-C stops the run: what was measured is kept.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError
from gridbench.family import runner_identity
from gridbench.family.verdicts import recorded_end
from gridbench.messaging import patterns, scaling, transfers
from gridbench.messaging.environments import NetEnvironment
from gridbench.messaging.load import load_net_spec_text
from gridbench.messaging.model import Environment, NetSpec
from gridbench.messaging.open_env import open_environment
from gridbench.messaging.plan import check_memory, steps
from gridbench.messaging.processes import ProcessBook
from gridbench.messaging.records import RECORDS_FILE
from gridbench.store import raw_files
from gridbench.store.layout import RunDir, now_iso
from gridbench.store.records import append_record
from gridbench.store.spawned import mark_run

Progress = Callable[[str], None]


def check_tools(spec: NetSpec) -> None:
    """Every native tool the spec needs is installed (a clear error naming the Debian
    package otherwise), before anything starts."""
    from gridbench.messaging.floor import require_tool

    if spec.floor.sockperf and (spec.pingpong.enabled or spec.echo.enabled):
        require_tool("sockperf")
    if spec.floor.iperf3 and (spec.pingpong.enabled or spec.transfer.enabled):
        require_tool("iperf3")
    if spec.rr.enabled:
        require_tool("sockperf")
        if spec.rr.udp:
            require_tool("iperf3")
    if "relay" in spec.environments and spec.relay.tool == "socat":
        require_tool("socat")
    needs_scp = spec.transfer.enabled and "scp" in spec.transfer.tools
    if needs_scp and shutil.which("scp") is None:
        raise GridbenchError(
            "scp is not installed", where="transfer.tools", fix="apt-get install openssh-client"
        )
    if needs_scp and spec.transfer.scp is None and not _sshd_path():
        raise GridbenchError(
            "sshd is not installed, and transfer.scp names no ssh server to use",
            where="transfer.scp",
            fix="apt-get install openssh-server, or set transfer.scp.host",
        )
    needs_root = "lan" in spec.environments
    if needs_root and os.geteuid() != 0:
        raise GridbenchError(
            "the lan environment makes network namespaces, which needs root",
            where="environments",
            fix="run as root, or drop lan from environments",
        )


def _sshd_path() -> str | None:
    return shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)


class NetRunner:
    """Runs one spec into one results directory."""

    def __init__(
        self,
        spec: NetSpec,
        data: dict[str, Any],
        root: Path,
        *,
        progress: Progress | None = None,
    ) -> None:
        self.spec = spec
        self.data = data
        self.root = root
        self.progress = progress or (lambda _msg: None)
        self.run: RunDir | None = None
        self.notes: list[str] = []

    def prepare(self) -> RunDir:
        """Check tools and memory, then create the results directory."""
        spec = self.spec
        check_tools(spec)
        check_memory(spec)
        run = RunDir.create(self.root, spec.name)
        mark_run(run.path)  # every peer started from now on is provably this run's
        self.run = run
        (run.path / "work").mkdir()
        run.begin(
            "net",
            spec.name,
            self.data,
            status="running",
            environments=list(spec.environments),
            patterns=[
                p
                for p, on in (
                    ("pingpong", spec.pingpong.enabled),
                    ("echo", spec.echo.enabled),
                    ("burst", spec.burst.enabled),
                    ("transfer", spec.transfer.enabled),
                )
                if on
            ],
            floor_factor=spec.floor.factor,
            pingpong_tests=spec.pingpong.tests,
            pingpong_round_trips=spec.pingpong.round_trips,
            steps=len(steps(spec)),
            **runner_identity(),  # cleanup knows the pid is still ours
            python=sys.version.split()[0],
            notes=[],
        )
        return run

    def record(self, rec: dict[str, Any]) -> None:
        """Append one record to the run (flushed to disk at once)."""
        assert self.run is not None
        append_record(self.run.path / RECORDS_FILE, rec)

    def note(self, text: str, **about: Any) -> None:
        """A fact the report states; recorded as it is found."""
        if text not in self.notes:
            self.notes.append(text)
            self.record({"pattern": "note", "text": text, **about})

    def execute(self) -> RunDir:
        """Run every step; the status in experiment.json says how it ended."""
        run = self.run or self.prepare()
        book = ProcessBook(run.path)

        def finish(status: str, error: str | None) -> None:
            raw_files.record(run, [RECORDS_FILE])  # analysis refuses it lost or cut
            run.update_experiment(status=status, error=error, finished=now_iso(), notes=self.notes)

        with recorded_end(finish):
            for env_name in self.spec.environments:
                self._environment(env_name, run, book)
        return run

    def _environment(self, name: Environment, run: RunDir, book: ProcessBook) -> None:
        spec = self.spec
        # absolute: peers get these paths on their command line, and run elsewhere (in the
        # MUSCLE3 manager's folder, or over SSH in a home folder) than this process
        work = (run.path / "work" / name).resolve()
        work.mkdir(parents=True, exist_ok=True)
        with ExitStack() as stack:
            env = stack.enter_context(open_environment(name, spec, work, book))
            floor_env = env
            if env.in_process:
                # no network of its own: in-process figures stand beside the loopback floor
                floor_env = stack.enter_context(open_environment("host", spec, work, book))
                self.note(
                    "in-process figures are compared with the loopback floor (sockperf and "
                    "iperf3 between two processes on this host)"
                )
            for text in env.notes:
                self.note(text, env=name)
            ctx = patterns.Context(
                spec=spec, env=env, work=work, book=book, record=self.record, note=self.note
            )
            for step in steps(spec):
                if step.env != name:
                    continue
                self.progress(step.label())
                for rec in self._step(step.pattern, step.what, step.config, ctx, floor_env):
                    self.record(rec)
            for text in env.notes:
                self.note(text, env=name)

    def _step(
        self,
        pattern: str,
        what: str,
        config: str,
        ctx: patterns.Context,
        floor_env: NetEnvironment,
    ) -> Iterator[dict[str, Any]]:
        if pattern == "floor":
            yield from patterns.floor(ctx, floor_env, what)
        elif pattern == "pingpong":
            yield from patterns.pingpong(ctx, what)
        elif pattern == "echo":
            yield from patterns.echo(ctx, what, config)
        elif pattern == "echo_scale":
            yield from scaling.echo_scale(ctx, what)
        elif pattern == "burst":
            yield from patterns.burst(ctx, what)
        elif pattern == "transfer":
            yield from transfers.transfer(ctx, what)
        elif pattern == "rr":
            from gridbench.messaging.rr import run_rr

            yield from run_rr(ctx, what)


def runner_for_text(text: str, root: Path) -> NetRunner:
    """A runner of the spec ``text``, validated now and not started (``Messaging.runner_for``,
    the dashboard's /start): as ``gridbench net run``."""
    spec, data = load_net_spec_text(text, "spec")
    return NetRunner(spec, data, root)
