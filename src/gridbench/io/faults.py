"""Faults on a replicated file system's servers, on the spec's schedule, and the way
back: kill (SIGKILL), stop (SIGTERM), pause (SIGSTOP), resume (SIGCONT), restart (the
system starts a dead server again; a paused one is continued). Servers are found through
:class:`~gridbench.io.gluster.Gluster`; every action is recorded as it happens.

Whatever gridbench paused is continued again, also when the run fails or is interrupted
(:meth:`Injector.release`)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import psutil

from gridbench.errors import BackendError, SpecError
from gridbench.io.gluster import Brick, Gluster, find_brick
from gridbench.io.resilience_model import ResilienceSpec

Record = Callable[[dict[str, Any]], None]

SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGTERM, "pause": signal.SIGSTOP}
POLL_S = 0.25
#: how often to ask for an index heal again while entries are left: an entry marked after
#: the crawl started waits for the next one, which the self-heal daemon starts on its own
#: only every cluster.heal-timeout (600 s by default)
HEAL_ASK_S = 5.0


def check_servers(spec: ResilienceSpec, gluster: Gluster) -> list[Brick]:
    """The volume's bricks, once every server a fault names is among them and online
    (before anything is written); else one error naming the fault and the bricks there are."""
    bricks = gluster.bricks()
    if not bricks:
        raise BackendError(
            f"volume {gluster.volume!r} has no bricks in gluster's status",
            where="spec field 'resilience.system.volume'",
            fix="check the volume name and that it is started (gluster volume status)",
        )
    names = ", ".join(f"{b.name} ({b.address})" for b in bricks)
    for i, f in enumerate(spec.faults):
        b = find_brick(bricks, f.server)
        if b is None:
            raise SpecError(
                f"fault on server {f.server!r}, which volume {gluster.volume!r} does not have",
                where=f"spec field 'resilience.faults.{i}.server'",
                fix=f"name one of its bricks: {names}",
            )
    down = [b for b in bricks if not b.online]
    if down:
        raise BackendError(
            f"brick(s) already down before the run: {', '.join(b.name for b in down)}",
            where=f"gluster volume {gluster.volume}",
            fix=f"bring them back first: gluster volume start {gluster.volume} force",
        )
    return bricks


def _created(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


class Injector:
    """Applies the faults and brings servers back; ``record`` stores each action."""

    def __init__(self, gluster: Gluster, bricks: list[Brick], record: Record) -> None:
        self.gluster = gluster
        self.pids = {b.name: b.pid for b in bricks}
        self.bricks = bricks
        self.record = record
        self.paused: dict[str, int] = {}
        self.down: set[str] = set()

    def _brick(self, server: str) -> Brick:
        b = find_brick(self.bricks, server)
        assert b is not None  # checked by check_servers before the run
        return b

    def apply(self, action: str, server: str, t: float, at: float) -> None:
        """One fault at ``t`` seconds into the load (planned for ``at``)."""
        b = self._brick(server)
        pid = self.pids.get(b.name)
        ok, detail, created = True, "", None
        try:
            if action in SIGNALS:
                if pid is None:
                    ok, detail = False, "no process to signal (brick already down)"
                else:
                    created = _created(pid)  # cleanup's proof that the pid is the same
                    os.kill(pid, SIGNALS[action])
                    if action == "pause":
                        self.paused[b.name] = pid
                    else:
                        self.down.add(b.name)
                        self.pids[b.name] = None
            elif action == "resume":
                detail = "" if self._continue(b.name) else "was not paused: nothing to do"
            else:  # restart
                was_paused = self._continue(b.name)
                if b.name in self.down:
                    self.gluster.start_force()
                    self.down.discard(b.name)
                    self._refresh()
                elif not was_paused:
                    detail = "was running: nothing to do"
        except (OSError, BackendError) as exc:
            ok, detail = False, str(exc)
        self.record(
            {
                "event": "fault",
                "action": action,
                "server": b.name,
                "address": b.address,
                "pid": pid,
                "created": created,
                "at": at,
                "t": t,
                "ok": ok,
                "detail": detail,
            }
        )

    def _continue(self, name: str) -> bool:
        """SIGCONT to a brick gridbench paused; False when it was not paused."""
        pid = self.paused.pop(name, None)
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        return pid is not None

    def _refresh(self) -> None:
        for b in self.gluster.bricks():
            self.pids[b.name] = b.pid

    def release(self) -> None:
        """Continue every brick gridbench paused (also on failure or Ctrl-C)."""
        for name in list(self.paused):
            with contextlib.suppress(OSError):
                self._continue(name)

    def restore(self, t: float) -> None:
        """After the load: every server back (continued, restarted), recorded if needed."""
        if not self.paused and not self.down:
            return
        names = sorted({*self.paused, *self.down})
        self.release()
        if self.down:
            self.gluster.start_force()
            self.down.clear()
            self._refresh()
        self.record({"event": "restore", "servers": names, "t": t, "ok": True})

    def _left_to_heal(self, asked: list[float]) -> tuple[bool, int | None]:
        """(all bricks online, entries left to heal or None); asks for a heal at once and
        again every HEAL_ASK_S while entries are left (``asked`` holds the last ask)."""
        bricks = self.gluster.bricks()
        whole = bool(bricks) and all(b.online for b in bricks)
        if not whole:
            return False, None
        if not asked or time.monotonic() - asked[-1] >= HEAL_ASK_S:
            self.gluster.heal()
            asked[:] = [time.monotonic()]
        return True, self.gluster.heal_count()

    def wait_recovered(
        self, since: float, now: Callable[[], float], timeout: float, cause: str
    ) -> None:
        """Poll until every brick is online and nothing is left to heal; record how long
        it took from ``since`` (seconds into the load): the time to recover."""
        t_online: float | None = None
        asked: list[float] = []
        last = ""
        while True:
            t = now()
            try:
                whole, left = self._left_to_heal(asked)
            except BackendError as exc:  # glusterd busy or restarting: ask again
                whole, left, last = False, None, exc.message
            if whole and t_online is None:
                t_online = t
            healed = left == 0
            if healed or t - since > timeout:
                self.record(
                    {
                        "event": "recovered",
                        "cause": cause,
                        "since": since,
                        "t": t,
                        "online_s": None if t_online is None else t_online - since,
                        "healed_s": t - since if healed else None,
                        "ok": healed,
                        "detail": ""
                        if healed
                        else f"not healed within {timeout:g} s"
                        + (f" (last answer: {last})" if last else ""),
                    }
                )
                return
            time.sleep(POLL_S)
