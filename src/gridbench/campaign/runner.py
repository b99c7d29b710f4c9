"""Running a campaign: its units in order (several at once where their hosts do not
overlap, with ``--parallel``), each repetition as its family's command in a process of
its own, every start and end in the campaign's log; the suspension criteria; resumption
after a kill -9, a Ctrl-C or a suspension (docs/campaigns.md).

A unit's process ends with the campaign's (``PR_SET_PDEATHSIG``: a campaign killed with
-9 leaves no unit running on), and runs in a session of its own (its Ctrl-C is the
campaign's to pass on: the unit aborts as its family does, keeping what it measured).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gridbench.campaign.folder import (
    COMPLETE,
    INTERRUPTED,
    RUNNING,
    SCHEMA,
    SUSPENDED,
    Attempt,
    CampaignDir,
    State,
    attempt_name,
    digest,
    named,
    replay,
)
from gridbench.campaign.model import ComponentSpec, Parsed, Unit, joined
from gridbench.campaign.units import (
    GRIDBENCH,
    Estimate,
    plan_units,
    shown,
    unit_env,
    validate_units,
)
from gridbench.campaign.verdicts import judge
from gridbench.errors import GridbenchError, SpecError
from gridbench.family import runner_identity
from gridbench.store.layout import now_iso, slug

POLL_S = 0.1
#: seconds between looks for a running unit's run folder
SCAN_S = 0.5
#: seconds a unit has to end after it was asked to (SIGINT or SIGTERM) before SIGKILL
GRACE_S = 60.0
PR_SET_PDEATHSIG = 1

Say = Callable[[str], None]


def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - not Linux
        return None


_LIBC = _libc()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    """In the unit's process, before exec: end (SIGTERM) when the campaign's process does."""
    if _LIBC is not None:
        with contextlib.suppress(Exception):
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def alive(pid: Any, create_time: Any) -> bool:
    """Whether the process ``pid`` that started at ``create_time`` still runs."""
    import psutil

    if not isinstance(pid, int) or not isinstance(create_time, int | float):
        return False
    try:
        return bool(abs(psutil.Process(pid).create_time() - float(create_time)) < 0.05)
    except (psutil.Error, OSError):
        return False


def stop_group(pid: int, create_time: float | None, grace_s: float = 10.0) -> None:
    """SIGTERM the process group of a unit's process (it leads its own session), then
    SIGKILL what is left after ``grace_s``; only when ``pid`` is still that process."""
    if not alive(pid, create_time):
        return
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    while time.monotonic() < end and alive(pid, create_time):
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


@dataclass
class Running:
    """One repetition of a unit whose process runs."""

    unit: Unit
    attempt: Attempt
    proc: subprocess.Popen[bytes]
    log: IO[bytes]
    before: set[str]
    deadline: float | None
    timed_out: bool = False
    next_scan: float = 0.0
    stop_sent: float | None = None


@dataclass
class Plan:
    """What the campaign's run has to do: every (unit, repetition), in order."""

    units: list[Unit]
    components: dict[str, ComponentSpec]
    estimates: dict[str, Estimate] = field(default_factory=dict)

    def items(self) -> list[tuple[Unit, int]]:
        return [(u, r) for u in self.units for r in range(1, u.spec.repetitions + 1)]

    def unit(self, key: str) -> Unit | None:
        return next((u for u in self.units if u.key == key), None)


def unit_record(u: Unit, est: Estimate | None, root: Path) -> dict[str, Any]:
    """What the campaign records of a unit, for its documents and pages."""
    return {
        "key": u.key,
        "component": u.component,
        "id": u.spec.id,
        "title": u.spec.title,
        "family": u.family,
        "spec": u.spec.spec,
        "spec_path": str(u.spec_path),
        "verb": u.spec.verb,
        "sets": list(u.sets),
        "args": list(u.spec.args),
        "command": shown(u, root=root),
        "run_name": u.run_name,
        "repetitions": u.spec.repetitions,
        "hosts": list(u.hosts),
        "after": list(u.spec.after),
        "features": list(u.spec.features),
        "require_valid": u.spec.pass_.valid,
        "thresholds": [t.model_dump(mode="json") for t in u.spec.pass_.thresholds],
        "timeout_s": u.spec.timeout,
        "estimate_s": est.seconds if est is not None else None,
        "estimate_note": est.note if est is not None else "",
    }


class CampaignRunner:
    """One ``gridbench campaign run``: opens (or resumes) the campaign folder, runs what
    is not finished, and leaves the log and the state."""

    def __init__(
        self,
        parsed: Parsed,
        plan: Plan,
        root: Path,
        *,
        new: bool = False,
        parallel: int = 1,
        say: Say = print,
        check: bool = True,
    ) -> None:
        self.parsed = parsed
        self.plan = plan
        self.root = root.resolve()
        self.new = new
        self.parallel = max(1, parallel)
        self.say = say
        self.check = check
        self.folder: CampaignDir | None = None
        self.state = State()
        self.running: list[Running] = []
        self.interrupted = False
        self.resumed = False
        self.records: dict[str, Any] = {}

    # -- the folder --------------------------------------------------------------------

    def open(self) -> CampaignDir:
        """The unfinished campaign of this name to resume, or a new one."""
        found = self.find()
        return found if found is not None else self.create()

    def find(self) -> CampaignDir | None:
        """The unfinished campaign of this name to resume (its state replayed), or None
        when a new one is to be made; an error when it runs, or cannot be resumed with
        this file."""
        name = self.parsed.spec.name
        earlier = named(self.root, name)
        last = earlier[-1] if earlier else None
        text_digest = digest(self.parsed.text)
        if last is not None and not self.new:
            st = last.read_state()
            status = st.get("status")
            runner = st.get("runner") or {}
            if status == RUNNING and alive(runner.get("pid"), runner.get("create_time")):
                raise GridbenchError(
                    f"campaign {last.id} is running (process {runner.get('pid')})",
                    where=str(last.path),
                    fix="wait for it ('gridbench campaign status FILE' shows its progress), "
                    "or stop that process first",
                )
            if status in (RUNNING, INTERRUPTED, SUSPENDED):
                if st.get("digest") != text_digest:
                    raise SpecError(
                        f"the campaign file changed since campaign {last.id} ({status}) was "
                        "started, so it cannot be resumed with it",
                        where=self.parsed.origin,
                        fix="restore the file to resume that campaign, or start a new one "
                        "with 'gridbench campaign run FILE --new' (the unfinished one is kept)",
                    )
                self.resumed = True
                self.folder = last
                self.state = replay(last.events())
                self.records = dict(st.get("units") or {})
                return last
        return None

    def create(self) -> CampaignDir:
        """A new campaign folder, with the campaign file's copy."""
        folder = CampaignDir.create(self.root, self.parsed.spec.name)
        folder.write_copy(self.parsed.text)
        self.folder = folder
        return folder

    def todo(self) -> list[Unit]:
        """The units with a repetition not finished yet (all of them, for a new campaign)."""
        return [
            u
            for u in self.plan.units
            if not all(self.state.is_done(u.key, r) for r in range(1, u.spec.repetitions + 1))
        ]

    def _state_doc(self, status: str) -> dict[str, Any]:
        assert self.folder is not None
        total = len(self.plan.items())
        done = sum(1 for u, r in self.plan.items() if self.state.is_done(u.key, r))
        created = self.state.sessions[0]["at"] if self.state.sessions else now_iso()
        return {
            "schema": SCHEMA,
            "id": self.folder.id,
            "name": self.parsed.spec.name,
            "description": self.parsed.spec.description,
            "status": status,
            "created": created,
            "updated": now_iso(),
            "digest": digest(self.parsed.text),
            "source": str(Path(self.parsed.origin).resolve()),
            "base": str(self.parsed.base),
            "root": str(self.root),
            "runner": runner_identity(),
            "parallel": self.parallel,
            "components": [
                {"id": c.id, "title": c.title, "units": [f"{c.id}.{u.id}" for u in c.units]}
                for c in self.parsed.spec.components
            ],
            "units": self.records,
            "progress": {"done": done, "total": total},
            "running": [r.attempt.name for r in self.running],
            "attempts": [a.to_dict() for a in self.state.attempts],
            "suspended": dict(self.state.suspended),
            "blocked": {f"{u}.r{r}": by for (u, r), by in self.state.blocked.items()},
            "finished": self.state.finished.get("at") if self.state.finished else None,
        }

    def _event(self, event: str, status: str = RUNNING, **fields: Any) -> None:
        assert self.folder is not None
        self.folder.log(event, **fields)
        self.state = replay(self.folder.events())
        self.folder.write_state(self._state_doc(status))

    # -- running -----------------------------------------------------------------------

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
        self._event(
            "begin", resumed=self.resumed, digest=digest(self.parsed.text), **runner_identity()
        )
        self._recover()
        with _signals_as_interrupt():
            try:
                self._loop()
            except KeyboardInterrupt:
                self._interrupt()
        status = (
            INTERRUPTED if self.interrupted else SUSPENDED if self.state.suspended else COMPLETE
        )
        self._event("finish", status=status, outcome=status)
        self.say(f"campaign {folder.id}: {status}")
        return status

    def _recover(self) -> None:
        """What an earlier run of this campaign left: an attempt started and never ended
        is an incident (killed midway), its process stopped if it somehow lives on, and
        its repetition runs again; a suspension is lifted (its units run again)."""
        for a in self.state.open_attempts():
            if a.pid is not None and alive(a.pid, a.create_time):
                stop_group(a.pid, a.create_time)
            if a.run is None:
                found = self._find_run(a.unit, set(), since=a.started)
                if found is not None:
                    self._event("run", unit=a.unit, rep=a.rep, attempt=a.attempt, run=found)
            self._event(
                "killed",
                unit=a.unit,
                rep=a.rep,
                attempt=a.attempt,
                reasons=[
                    "the campaign's process ended during it (kill -9, a crash, or the "
                    "machine stopped)"
                ],
            )
            self.say(f"  {a.name}: killed midway in an earlier run; it runs again")
        if self.state.suspended:
            rerun = sorted(set(self.state.suspended.values()))
            self._event("resume", rerun=rerun, lifted=sorted(self.state.suspended))
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
                    self._event("blocked", unit=u.key, rep=r, by=by)

    def _suspended(self, u: Unit) -> str | None:
        return self.state.suspended.get("*") or self.state.suspended.get(u.component)

    def _dep_key(self, u: Unit, ref: str) -> str:
        return ref if "." in ref else f"{u.component}.{ref}"

    def _blocker(self, u: Unit) -> str | None:
        """An ``after:`` unit that finished without passing (or cannot run), or None."""
        for ref in u.spec.after:
            dep = self.plan.unit(self._dep_key(u, ref))
            if dep is None:
                continue
            reps = range(1, dep.spec.repetitions + 1)
            finals = [self.state.final(dep.key, r) for r in reps]
            if all(f is not None and f.done for f in finals):
                if any(f is not None and f.outcome != "passed" for f in finals):
                    return dep.key
            elif self._suspended(dep) is not None or any(
                (dep.key, r) in self.state.blocked for r in reps
            ):
                return dep.key
        return None

    def _waiting(self, u: Unit) -> bool:
        """An ``after:`` unit not finished yet."""
        for ref in u.spec.after:
            dep = self.plan.unit(self._dep_key(u, ref))
            if dep is None:
                continue
            if not all(self.state.is_done(dep.key, r) for r in range(1, dep.spec.repetitions + 1)):
                return True
        return False

    def _conflicts(self, u: Unit) -> bool:
        """Whether ``u`` may not start beside what runs: a host in common, the same
        unit, or the same run name (its run folder is found by its name)."""
        for r in self.running:
            if r.unit.key == u.key or r.unit.run_name == u.run_name:
                return True
            if set(r.unit.hosts) & set(u.hosts):
                return True
        return False

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
                self._event("blocked", unit=u.key, rep=r, by=blocker)
                self.say(f"  {u.key} r{r}: not run, {blocker} did not pass (after:)")
                continue
            if (
                self.interrupted
                or len(self.running) >= self.parallel
                or self._waiting(u)
                or self._conflicts(u)
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
        before = self._names()
        log = open(self.folder.unit_log(name), "wb")  # noqa: SIM115 (closed when it ends)
        env = unit_env(self.root, GRIDBENCH_CAMPAIGN=self.folder.id, GRIDBENCH_UNIT=name)
        proc = subprocess.Popen(
            [*GRIDBENCH, *u.argv()],
            cwd=u.base,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # safe: no thread runs in this process now
        )
        import psutil

        try:
            created = psutil.Process(proc.pid).create_time()
        except psutil.Error:
            created = None
        command = shown(u, root=self.root)
        self._event(
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

    def _names(self) -> set[str]:
        try:
            return {e.name for e in os.scandir(self.root)}
        except OSError:
            return set()

    def _claimed(self) -> set[str]:
        return {a.run for a in self.state.attempts if a.run}

    def _find_run(self, key: str, before: set[str], since: str | None = None) -> str | None:
        """The run folder a unit's process made: new since it started, named after the
        unit's spec (``<stamp>-<name>``, ``-2`` …), and no other attempt's."""
        u = self.plan.unit(key)
        if u is None:
            return None
        pattern = re.compile(rf"^(\d{{8}}T\d{{6}}Z)-{re.escape(slug(u.run_name))}(-\d+)?$")
        stamp = _stamp(since) if since else None
        claimed = self._claimed()
        found = []
        for name in self._names() - before:
            m = pattern.match(name)
            if m is None or name in claimed or not (self.root / name).is_dir():
                continue
            if stamp is not None and m.group(1) < stamp:
                continue
            found.append(name)
        return min(found) if found else None

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
        self._event("run", unit=a.unit, rep=a.rep, attempt=a.attempt, run=run)
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
        self._event(
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
        self._event(
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


def _stamp(iso: str) -> str | None:
    """An ISO time as a run folder's stamp (``YYYYmmddTHHMMSSZ``), or None."""
    from datetime import UTC, datetime

    try:
        return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    except ValueError:
        return None


@contextlib.contextmanager
def _signals_as_interrupt() -> Iterator[None]:
    """SIGTERM as Ctrl-C while the campaign runs (the units stop, the log says so)."""

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def check_units(parsed: Parsed, units: list[Unit]) -> tuple[dict[str, Estimate], list[str]]:
    """Each unit checked and estimated by its family's plan (at once); a unit whose plan
    fails is checked by its family's validate (a spec its family refuses is an error line
    naming the unit's line in the campaign file; a family without a plan just gives no
    estimate)."""
    estimates = plan_units(units)
    unplanned = [e.unit for e in estimates if e.plan is None]
    errors = validate_units(parsed, unplanned)
    return {e.unit.key: e for e in estimates}, errors


def plan_of(parsed: Parsed, units: list[Unit]) -> Plan:
    """What a campaign has to do, by component."""
    return Plan(units=units, components={c.id: c for c in parsed.spec.components})


def prepare(parsed: Parsed, units: list[Unit]) -> tuple[Plan, list[str]]:
    """Every unit checked and estimated (``campaign plan``)."""
    estimates, errors = check_units(parsed, units)
    plan = plan_of(parsed, units)
    plan.estimates.update(estimates)
    return plan, errors
