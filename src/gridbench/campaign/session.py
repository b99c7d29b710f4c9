"""The campaign folder one ``gridbench campaign run`` works in: the unfinished campaign
of its name to resume (its state replayed from the log), or a new one; every event
appended to the log, then the state (``campaign.json``) written again from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.campaign.folder import (
    INTERRUPTED,
    RUNNING,
    SCHEMA,
    SUSPENDED,
    CampaignDir,
    State,
    digest,
    named,
    replay,
)
from gridbench.campaign.model import Parsed, Unit
from gridbench.campaign.processes import Running, Say, alive
from gridbench.campaign.run_plan import Plan, read_unit_records
from gridbench.errors import GridbenchError, SpecError
from gridbench.family import runner_identity
from gridbench.store.layout import now_iso


class CampaignSession:
    """The folder, the log and the state of one ``gridbench campaign run`` (what
    :class:`gridbench.campaign.runner.CampaignRunner` runs the units in)."""

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
            found = st.get("runner")
            runner: dict[str, Any] = found if isinstance(found, dict) else {}
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
                self.records = read_unit_records(st)
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

    def record_event(self, event: str, status: str = RUNNING, **fields: Any) -> None:
        """One event appended to the campaign's log, its state replayed and written."""
        assert self.folder is not None
        self.folder.log(event, **fields)
        self.state = replay(self.folder.events())
        self.folder.write_state(self._state_doc(status))

    # -- running -----------------------------------------------------------------------
