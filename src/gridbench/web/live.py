"""Live state of a run the dashboard's run manager drives, pushed to listeners.

:class:`LiveRun` is the run's :class:`~gridbench.family.dashboard.LiveSink`: its state, recent
messages and the family's part of the view (the runner's snapshot, drawn by the family's
own template and script). Every change is pushed at once to each subscriber's queue (the
server-sent-event streams); nothing polls. Everything here runs on the event loop of the
server, the same loop as the runner. It knows no family.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from gridbench.family.dashboard import LiveRunner
from gridbench.states import FINISHED, state_tone

#: Events a slow listener may fall behind before it is sent a fresh snapshot instead.
QUEUE_SIZE = 1000
FINAL = FINISHED  # gridbench.states: the one vocabulary


class LiveRun:
    """One run's live view; also the sink its runner publishes to."""

    def __init__(self, runner: LiveRunner) -> None:
        self.runner = runner
        self.run_id = runner.run.id
        self.name = runner.name
        self.status = "queued"
        self.error: str | None = None
        self.created = time.time()
        self.messages: deque[str] = deque(maxlen=200)
        self.stop_after_trial = False
        self._subs: set[asyncio.Queue[tuple[str, Any]]] = set()

    # -- listeners ---------------------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[tuple[str, Any]]:
        q: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(QUEUE_SIZE)
        self._subs.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[tuple[str, Any]]) -> None:
        self._subs.discard(q)

    @property
    def subscribers(self) -> int:
        """Open event streams of this run."""
        return len(self._subs)

    def publish(self, kind: str, data: Any) -> None:
        for q in list(self._subs):
            try:
                q.put_nowait((kind, data))
            except asyncio.QueueFull:  # a stalled tab: resynchronise it with a snapshot
                while not q.empty():
                    q.get_nowait()
                q.put_nowait(("snapshot", self.snapshot()))

    def snapshot(self) -> dict[str, Any]:
        """Everything a page needs to draw the live view from scratch: the family's part
        (the runner's snapshot) and the run's state and messages."""
        return {
            **self.runner.snapshot(),
            "id": self.run_id,
            "name": self.name,
            "status": self.status,
            "error": self.error,
            "messages": list(self.messages),
            "stop_after_trial": self.stop_after_trial,
            "now": time.time(),
        }

    def set_status(self, status: str, error: str | None = None) -> None:
        self.status = status
        if error is not None:
            self.error = error
        self.publish("status", {"status": status, "tone": state_tone(status), "error": self.error})

    @property
    def final(self) -> bool:
        return self.status in FINAL

    def message(self, text: str) -> None:
        self.messages.append(text)
        self.publish("message", text)
