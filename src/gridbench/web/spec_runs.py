"""Runs of other families started from a spec on ``/start``: each family's own runner
(as its ``run`` command drives it) in a worker thread, then analysed and reported as the
CLI does. Unlike the live runs a family's pages hand the run manager (web/manager.py:
job flow's) they have no live view and no stop
button: the families' runners cannot be interrupted from another thread, so a run goes to
its end, and a server shutting down waits for it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from gridbench.errors import GridbenchError
from gridbench.family import Executes
from gridbench.store.layout import RunDir
from gridbench.web.manager import QueueFull, analyse

log = logging.getLogger(__name__)

POLL_S = 0.05  # how often /start looks whether the runner made its results folder


class SpecRuns:
    """The runs this server started from a spec, by run id (at most ``max_running``)."""

    def __init__(self, root: Path, max_running: int) -> None:
        self.root = root
        self.max_running = max_running
        self.tasks: dict[str, asyncio.Task[None]] = {}
        #: every run started and not ended, from the moment its slot is taken (before its
        #: folder exists): the limit counts these, so starts at once cannot all pass it
        self._busy: set[asyncio.Task[None]] = set()

    def running(self, run_id: str) -> bool:
        """Whether this server runs ``run_id`` now."""
        task = self.tasks.get(run_id)
        return task is not None and not task.done()

    async def start(self, runner: Executes) -> RunDir:
        """Run ``runner`` in a thread; its results folder once made, or the error that
        stopped it before (nothing was written then). The slot is taken before the first
        ``await``, so the check and the taking are one step of the event loop."""
        self._busy = {t for t in self._busy if not t.done()}
        if len(self._busy) >= self.max_running:
            raise QueueFull(
                f"{len(self._busy)} runs started on the Start page are going already "
                f"(this dashboard runs at most {self.max_running} at once)",
                where="Start",
                fix="wait for one of them to finish, then start this one again",
            )
        task = asyncio.create_task(asyncio.to_thread(self._execute, runner))
        self._busy.add(task)
        while runner.run is None and not task.done():
            await asyncio.sleep(POLL_S)
        run = runner.run
        if run is None:
            await task  # raises what stopped the runner before its folder existed
            raise GridbenchError("nothing was run", fix="see the server's log")
        self.tasks = {k: t for k, t in self.tasks.items() if not t.done()}
        self.tasks[run.id] = task
        return run

    def _execute(self, runner: Executes) -> None:
        try:
            runner.execute()
        except GridbenchError as exc:
            if runner.run is None:
                raise
            # the run is marked failed; what it measured is still analysed, as by the CLI
            log.warning("run %s failed: %s", runner.run.id, exc)
        except Exception:
            if runner.run is None:
                raise
            log.exception("run %s failed", runner.run.id)
            runner.run.update_experiment(status="failed")
            return
        run = runner.run
        if run is None:  # a runner that returned without a folder wrote nothing
            return
        try:
            analyse(run.path, self.root)
        except GridbenchError as exc:
            log.warning("analysis of %s failed: %s", run.id, exc)
