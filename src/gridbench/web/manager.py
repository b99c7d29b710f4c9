"""Runs several experiments at once in the server's event loop, each its own asyncio task.

A family's pages hand the manager a :class:`~gridbench.family.dashboard.LiveRunner` (job flow's: its
own runner, backend and safety caps); ``max_running`` of them run at a time and the rest
queue. ``abort`` calls the runner's abort hook, the CLI's first Ctrl-C (stop submitting,
cancel outstanding work, finalise the record); a second abort is its second Ctrl-C (cancel
the task). ``stop`` lets the running part (a trial) finish and starts no more. Finished
runs are analysed and reported exactly as by the CLI. It knows no family.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError
from gridbench.family.dashboard import LiveRunner
from gridbench.family.dashboard import QueueFull as QueueFull
from gridbench.pipeline import analyze_and_report
from gridbench.store.layout import now_iso
from gridbench.web.live import LiveRun
from gridbench.web.results import warm

log = logging.getLogger(__name__)

#: Finished runs kept in memory (for their live page and event stream); older ones are
#: dropped, their results stay in the store.
KEEP_FINISHED = 50


@dataclass
class ManagedRun:
    runner: LiveRunner
    live: LiveRun
    task: asyncio.Task[None] | None = None
    aborts: int = 0
    path: Path = field(default_factory=Path)


class RunManager:
    """The experiments this server started, by run id."""

    def __init__(self, root: Path, *, max_running: int = 4, max_queued: int = 16) -> None:
        self.root = root
        self.max_running = max_running
        self.max_queued = max_queued
        self.runs: dict[str, ManagedRun] = {}
        self._slots: asyncio.Semaphore | None = None

    def _sem(self) -> asyncio.Semaphore:
        if self._slots is None:  # created inside the running loop
            self._slots = asyncio.Semaphore(self.max_running)
        return self._slots

    def start(self, make: Callable[[], LiveRunner]) -> str:
        """Queue the runner ``make`` returns (it makes the run's folder, so the run has an
        id); its id. Refused (QueueFull) before anything is made when the queue is full."""
        queued = sum(1 for m in self.runs.values() if m.live.status == "queued")
        if queued >= self.max_queued:
            raise QueueFull(
                f"{queued} experiments are already queued (the server's limit)",
                where="--max-queued",
                fix="wait for queued runs to start, abort some, or restart the server with "
                "a larger --max-queued",
            )
        runner = make()  # bad options are refused here, before anything runs
        live = LiveRun(runner)
        managed = ManagedRun(runner, live, path=runner.run.path)
        self._prune()
        self.runs[live.run_id] = managed
        managed.task = asyncio.get_running_loop().create_task(
            self._run(managed), name=f"gridbench-run-{live.run_id}"
        )
        return live.run_id

    def running(self) -> list[dict[str, Any]]:
        """The live views of the runs not finished yet."""
        return [m.live.snapshot() for m in self.runs.values() if not m.live.final]

    def _prune(self) -> None:
        """Forget the oldest finished runs beyond KEEP_FINISHED (dicts keep insertion order)."""
        done = [
            rid
            for rid, m in self.runs.items()
            if m.live.final and (m.task is None or m.task.done())
        ]
        for rid in done[: max(0, len(done) - KEEP_FINISHED + 1)]:
            del self.runs[rid]

    def get(self, run_id: str) -> ManagedRun | None:
        return self.runs.get(run_id)

    def live(self) -> list[LiveRun]:
        return [m.live for m in self.runs.values()]

    def stop(self, run_id: str) -> bool:
        """Finish the running trial, then stop (the record says aborted)."""
        m = self.runs.get(run_id)
        if m is None or m.live.final:
            return False
        m.live.stop_after_trial = True
        m.live.message("stop requested: the running trial finishes, no further trials start")
        if m.live.status == "queued":
            return self.abort(run_id)
        m.runner.finish_current()
        return True

    def abort(self, run_id: str) -> bool:
        """As Ctrl-C: the first stops now and cleans up; a second one forces (cancels)."""
        m = self.runs.get(run_id)
        if m is None or m.live.final:
            return False
        m.aborts += 1
        if m.live.status == "queued":  # nothing submitted yet: done at once
            m.runner.abort()
            m.runner.run.update_experiment(status="aborted", ended=now_iso())
            m.live.message("aborted while queued: nothing was submitted")
            m.live.set_status("aborted")
            if m.task is not None:
                m.task.cancel()
            return True
        if m.aborts == 1:
            m.live.message(
                "stopping: no new submissions; cancelling outstanding jobs and saving what "
                "was recorded (abort again to force)"
            )
            m.runner.abort()
            m.live.set_status("aborting")
        elif m.task is not None:
            m.live.message("forced: cancelling the run task")
            m.task.cancel()
        return True

    async def _run(self, m: ManagedRun) -> None:
        live, runner = m.live, m.runner
        try:
            async with self._sem():
                if m.aborts:  # aborted while queued: nothing was submitted
                    return
                live.set_status("starting")
                try:
                    outcome = await runner.execute(live)
                except GridbenchError as exc:
                    live.set_status("failed", exc.message)
                    return
                except asyncio.CancelledError:
                    live.set_status("aborted", "forced stop")
                    raise
                except Exception as exc:  # a bug or a backend crash: recorded, not raised
                    log.exception("run %s failed", live.run_id)
                    live.set_status("failed", f"{type(exc).__name__}: {exc}")
                    return
            if outcome.recorded:
                live.set_status("analysing")
                try:
                    await asyncio.to_thread(analyse, m.path, self.root)
                except GridbenchError as exc:
                    live.message(f"analysis failed: {exc.message}")
                except Exception as exc:
                    log.exception("analysis of %s failed", live.run_id)
                    live.message(f"analysis failed: {type(exc).__name__}: {exc}")
            live.set_status(outcome.status, outcome.error)
        except asyncio.CancelledError:
            if live.status != "aborted":
                raise
            # aborted while queued (abort() recorded it) or forced: the task ends here
        finally:
            live.publish("end", {"status": live.status})

    async def shutdown(self, timeout_s: float = 60.0) -> None:
        """Abort every run (as Ctrl-C) and wait for their clean-up."""
        tasks = [m.task for m in self.runs.values() if m.task is not None and not m.task.done()]
        for rid, m in self.runs.items():
            if not m.live.final:
                self.abort(rid)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout_s)
            for t in pending:
                t.cancel()
                with contextlib.suppress(BaseException):
                    await t


def analyse(path: Path, root: Path) -> None:
    """Analyse and report as ``gridbench run`` does, then build the results page's view."""
    analyze_and_report(path)
    warm(path, root)
