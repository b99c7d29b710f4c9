"""Running a campaign: its units in order (several at once where their hosts do not
overlap, with ``--parallel``), each repetition as its family's command in a process of
its own, every start and end in the campaign's log; the suspension criteria; resumption
after a kill -9, a Ctrl-C or a suspension (docs/campaigns.md).

A unit's process ends with the campaign's and runs in a session of its own
(:mod:`gridbench.campaign.processes`: its Ctrl-C is the campaign's to pass on, and the
unit aborts as its family does, keeping what it measured).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from gridbench.campaign import ordering
from gridbench.campaign.folder import COMPLETE, INTERRUPTED, SUSPENDED, attempt_name, digest
from gridbench.campaign.model import Unit, joined
from gridbench.campaign.processes import (
    CAMPAIGN_ENV,
    UNIT_ENV,
    Running,
    die_with_parent,
    is_unit,
    signals_as_interrupt,
    stop_group,
)
from gridbench.campaign.run_folders import clean_up_killed, find_run, names
from gridbench.campaign.run_plan import check_units, unit_record
from gridbench.campaign.session import CampaignSession
from gridbench.campaign.units import GRIDBENCH, shown, unit_env
from gridbench.campaign.verdicts import judge
from gridbench.errors import SpecError
from gridbench.family import runner_identity
from gridbench.store.safe_open import open_append

POLL_S = 0.1
#: seconds between looks for a running unit's run folder
SCAN_S = 0.5
#: seconds a unit has to end after it was asked to (SIGINT or SIGTERM) before SIGKILL
GRACE_S = 60.0


class CampaignRunner(CampaignSession):
    """One ``gridbench campaign run``: opens (or resumes) the campaign folder, runs what
    is not finished, and leaves the log and the state."""

    def execute(self) -> str:
        """Run what is left; returns the campaign's state (complete, suspended,
        interrupted)."""
        folder = self.find()
        if self.check:  # each unit still to run, checked and estimated by its family
            estimates, errors = check_units(self.parsed, self.todo())
            if errors:  # nothing is made or run: a new campaign leaves no folder
                raise joined([SpecError(e) for e in errors])
            self.plan.estimates.update(estimates)
        folder = folder if folder is not None else self.create()
        for u in self.plan.units:
            est = self.plan.estimates.get(u.key)
            old = self.records.get(u.key)
            record = unit_record(u, est, self.root)
            if est is None and isinstance(old, dict):  # finished before: its estimate stays
                record["estimate_s"] = old.get("estimate_s")
                record["estimate_note"] = old.get("estimate_note", "")
            self.records[u.key] = record
        self.record_event(
            "begin", resumed=self.resumed, digest=digest(self.parsed.text), **runner_identity()
        )
        self._recover()
        with signals_as_interrupt():
            try:
                self._loop()
            except KeyboardInterrupt:
                self._interrupt()
        status = (
            INTERRUPTED if self.interrupted else SUSPENDED if self.state.suspended else COMPLETE
        )
        self.record_event("finish", status=status, outcome=status)
        self.say(f"campaign {folder.id}: {status}")
        return status

    def _recover(self) -> None:
        """What an earlier run of this campaign left: an attempt started and never ended
        is an incident (killed midway), its process stopped if it somehow lives on, its
        run cleaned up by its family (``gridbench cleanup``), and its repetition runs
        again; a suspension is lifted (its units run again)."""
        for a in self.state.open_attempts():
            if a.pid is not None and is_unit(a.pid, a.create_time, a.name):
                stop_group(a.pid, a.create_time, a.name)
            run = a.run
            if run is None:
                run = self._find_run(a.unit, set(), since=a.started)
                if run is not None:
                    self.record_event("run", unit=a.unit, rep=a.rep, attempt=a.attempt, run=run)
            reasons = [
                "the campaign's process ended during it (kill -9, a crash, or the machine stopped)"
            ]
            if run is not None:
                reasons.append(clean_up_killed(self.root, run, GRIDBENCH, unit_env(self.root)))
            self.record_event("killed", unit=a.unit, rep=a.rep, attempt=a.attempt, reasons=reasons)
            self.say(f"  {a.name}: killed midway in an earlier run; it runs again")
        if self.state.suspended:
            rerun = sorted(set(self.state.suspended.values()))
            self.record_event("resume", rerun=rerun, lifted=sorted(self.state.suspended))
            self.say(f"  resuming after the suspension by {', '.join(rerun)}: they run again")
        self.state.blocked.clear()

    def _loop(self) -> None:
        pending = [(u, r) for u, r in self.plan.items() if not self.state.is_done(u.key, r)]
        while pending or self.running:
            pending = self._start_ready(pending)
            if not self.running:
                if pending:  # nothing can start and nothing runs: what is left is held
                    self._hold(pending)
                break
            time.sleep(POLL_S)
            self._poll()

    def _hold(self, pending: list[tuple[Unit, int]]) -> None:
        for u, r in pending:
            if self._suspended(u) is None:
                by = self._blocker(u)
                if by is not None and (u.key, r) not in self.state.blocked:
                    self.record_event("blocked", unit=u.key, rep=r, by=by)

    def _suspended(self, u: Unit) -> str | None:
        return ordering.suspended_by(self.state, u)

    def _blocker(self, u: Unit) -> str | None:
        return ordering.blocker(self.plan, self.state, u)

    def _start_ready(self, pending: list[tuple[Unit, int]]) -> list[tuple[Unit, int]]:
        left: list[tuple[Unit, int]] = []
        for u, r in pending:
            if self._suspended(u) is not None:
                continue  # not run: the suspension says why
            if self.state.is_done(u.key, r):
                continue
            if (u.key, r) in self.state.blocked:
                continue
            blocker = self._blocker(u)
            if blocker is not None:
                self.record_event("blocked", unit=u.key, rep=r, by=blocker)
                self.say(f"  {u.key} r{r}: not run, {blocker} did not pass (after:)")
                continue
            if (
                self.interrupted
                or len(self.running) >= self.parallel
                or ordering.waiting(self.plan, self.state, u)
                or ordering.conflicts((r.unit for r in self.running), u)
                or (self.parallel == 1 and left)  # one at a time: strictly in order
            ):
                left.append((u, r))
                continue
            self._start(u, r)
        return left

    def _start(self, u: Unit, rep: int) -> None:
        assert self.folder is not None
        n = self.state.next_attempt(u.key, rep)
        name = attempt_name(u.key, rep, n)
        before = names(self.root)
        log = open_append(self.folder.unit_log(name))  # never through a planted link
        env = unit_env(self.root, **{CAMPAIGN_ENV: self.folder.id, UNIT_ENV: name})
        proc = subprocess.Popen(
            [*GRIDBENCH, *u.argv()],
            cwd=u.base,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,  # safe: no thread runs in this process now
        )
        import psutil

        try:
            created = psutil.Process(proc.pid).create_time()
        except psutil.Error:
            created = None
        command = shown(u, root=self.root)
        self.record_event(
            "start",
            unit=u.key,
            rep=rep,
            attempt=n,
            command=command,
            hosts=list(u.hosts),
            pid=proc.pid,
            create_time=created,
        )
        attempt = next(a for a in self.state.attempts if a.name == name)
        timeout = u.spec.timeout
        self.running.append(
            Running(
                u,
                attempt,
                proc,
                log,
                before,
                time.monotonic() + timeout if timeout else None,
            )
        )
        reps = f" repetition {rep}/{u.spec.repetitions}" if u.spec.repetitions > 1 else ""
        again = f" (attempt {n})" if n > 1 else ""
        self.say(f"▶ {u.key}{reps}{again}: {command}")

    def _find_run(self, key: str, before: set[str], since: str | None = None) -> str | None:
        """The run folder a unit's process made (:func:`run_folders.find_run`)."""
        u = self.plan.unit(key)
        if u is None:
            return None
        claimed = {a.run for a in self.state.attempts if a.run}
        return find_run(self.root, u.run_name, before, claimed, since)

    def _poll(self) -> None:
        now = time.monotonic()
        for r in list(self.running):
            a = r.attempt
            if a.run is None and now >= r.next_scan:
                r.next_scan = now + SCAN_S
                self._found(r)
            rc = r.proc.poll()
            if rc is None:
                if r.deadline is not None and now > r.deadline and r.stop_sent is None:
                    r.timed_out = True
                    r.stop_sent = now
                    with contextlib.suppress(OSError):
                        os.killpg(r.proc.pid, signal.SIGTERM)
                elif r.stop_sent is not None and now - r.stop_sent > GRACE_S:
                    with contextlib.suppress(OSError):
                        os.killpg(r.proc.pid, signal.SIGKILL)
                continue
            self._end(r, rc)

    def _found(self, r: Running) -> None:
        assert self.folder is not None
        a = r.attempt
        run = self._find_run(a.unit, r.before)
        if run is None:
            return
        self.folder.link(a.name, run)
        self.record_event("run", unit=a.unit, rep=a.rep, attempt=a.attempt, run=run)
        r.attempt = next(x for x in self.state.attempts if x.name == a.name)

    def _end(self, r: Running, rc: int) -> None:
        self.running.remove(r)
        r.log.close()
        if r.attempt.run is None:
            self._found(r)
        a = next(x for x in self.state.attempts if x.name == r.attempt.name)
        a.exit = rc
        judged = judge(
            self.root,
            a,
            require_valid=r.unit.spec.pass_.valid,
            timed_out=r.timed_out,
            interrupted=self.interrupted,
        )
        self.record_event(
            "end",
            unit=a.unit,
            rep=a.rep,
            attempt=a.attempt,
            exit=rc,
            run=a.run,
            outcome=judged.outcome,
            reasons=list(judged.reasons),
        )
        mark = {"passed": "✓", "failed": "✗"}.get(judged.outcome, "!")
        why = f": {judged.reasons[0]}" if judged.reasons else ""
        self.say(f"{mark} {a.name}: {judged.outcome}{why}" + (f" ({a.run})" if a.run else ""))
        self._suspend_if(r.unit, judged.outcome)

    def _suspend_if(self, u: Unit, outcome: str) -> None:
        comp = self.plan.components.get(u.component)
        rule = comp.suspend if comp is not None else None
        if rule is None or outcome not in rule.on:
            return
        scope_id = "*" if rule.scope == "campaign" else u.component
        if scope_id in self.state.suspended:
            return
        self.record_event(
            "suspend",
            scope=rule.scope,
            scope_id=scope_id,
            component=u.component,
            by=u.key,
            outcome=outcome,
        )
        what = "the campaign" if rule.scope == "campaign" else f"component {u.component}"
        self.say(f"  {what} suspended: {u.key} {outcome} (suspension criteria)")

    def _interrupt(self) -> None:
        """Ctrl-C (or SIGTERM): each running unit is asked to stop as its family stops
        on Ctrl-C (keeping what it measured); a second one kills them."""
        self.interrupted = True
        self.say(
            "interrupted: the running units stop and keep what they measured "
            "(Ctrl-C again to kill them); 'gridbench campaign run' resumes"
        )
        for r in self.running:
            with contextlib.suppress(OSError):
                os.killpg(r.proc.pid, signal.SIGINT)
            r.stop_sent = time.monotonic()
        try:
            while self.running:
                time.sleep(POLL_S)
                self._poll()
        except KeyboardInterrupt:
            for r in list(self.running):
                with contextlib.suppress(OSError):
                    os.killpg(r.proc.pid, signal.SIGKILL)
                r.proc.wait()
                self._end(r, r.proc.returncode)
