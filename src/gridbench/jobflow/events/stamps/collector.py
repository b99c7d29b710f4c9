"""Collect a chain's server stamps during a run: every reader once per sweep, the join to
the run's jobs, each (job, stage) emitted once, and counts for trial.json.

Stamps that meet no job yet wait (bounded) for the next sweep; ones still unjoined at the
end are reported, never silently lost: ``report()`` tells how many of each tier joined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from gridbench.jobflow.events.model import Event
from gridbench.jobflow.events.stamps.declare import StampPlan
from gridbench.jobflow.events.stamps.join import backend_keys, join_stamps
from gridbench.jobflow.events.stamps.kind import make_reader
from gridbench.jobflow.events.stamps.parse import ID_ONLY, empty
from gridbench.jobflow.events.stamps.readers import Deadline, Reader, reading

PENDING_CAP = 200_000  # unjoined stamps kept for later sweeps (other users' jobs age out)


class StampCollector:
    """Reads every declared source incrementally and joins the stamps to backend ids."""

    def __init__(self, plan: StampPlan, locations: Sequence[str]) -> None:
        self.plan = plan
        self.readers: list[Reader] = [
            make_reader(s, loc) for s, loc in zip(plan.sources, locations, strict=True)
        ]
        self._pending = empty()
        self._keys = pl.DataFrame(
            schema={"tier": pl.String, "key": pl.String, "backend_id": pl.String}
        )
        self._emitted: set[tuple[str, str]] = set()
        self._known: set[str] = set()
        self.reads = 0
        self.dropped = 0
        self.pending_dropped = 0
        self.problems: dict[str, str] = {}
        self.failed_reads = 0
        self.joined: dict[str, int] = {}
        self._tier_jobs: dict[str, set[str]] = {}
        #: the deadline of every read; cancelled (from the event loop's thread) when the
        #: run stops, which ends a read under way at once
        self.deadline = Deadline()

    def cancel(self) -> None:
        """End the read under way (if any) and every later one: the run is stopping."""
        self.deadline.cancel()

    def collect(
        self, backend_ids: Sequence[str], names: Mapping[str, str] | None = None
    ) -> list[Event]:
        """New stamps of these backend ids (one read of each source); blocking I/O.
        ``names`` (backend id -> gridbench's job name) serves tiers keyed by ``name``; a
        job's name must come with its id's first appearance."""
        frames = [self._pending]
        for i, r in enumerate(self.readers):
            if self.deadline.cancelled.is_set():
                break  # the run is being stopped: no source is read again
            with reading(self.deadline):  # each read ends by its deadline
                res = r.read()
            self.reads += 1
            self.dropped += res.dropped
            where = f"sources[{i}] ({self.plan.sources[i].tier})"
            if res.problem:  # the latest problem of each source; gone once it reads again
                self.problems[where] = res.problem
                self.failed_reads += 1
            else:
                self.problems.pop(where, None)
            frames.append(res.frame)
        new_ids = [i for i in backend_ids if i not in self._known]
        if new_ids:
            self._known.update(new_ids)
            self._keys = pl.concat([self._keys, backend_keys(self.plan, new_ids, names)])
        stamps = pl.concat(frames)
        hit, rest, self._keys = join_stamps(self.plan, stamps, self._keys)
        over = rest.height - PENDING_CAP
        if over > 0:
            self.pending_dropped += over
            rest = rest.tail(PENDING_CAP)
        self._pending = rest
        # the earliest stamp of each (job, stage): a database may list an event twice
        hit = hit.filter(pl.col("stage") != ID_ONLY)
        first = hit.sort("t_ns").unique(["backend_id", "stage"], keep="first", maintain_order=True)
        out: list[Event] = []
        for bid, tier, stage, t_ns, prec in first.iter_rows():
            if (bid, stage) in self._emitted:
                continue
            self._emitted.add((bid, stage))
            self.joined[tier] = self.joined.get(tier, 0) + 1
            self._tier_jobs.setdefault(tier, set()).add(bid)
            out.append(Event(bid, stage, t_ns, source=tier, precision_ns=prec, agent=tier))
        return out

    def lacking_last(self, backend_ids: Sequence[str]) -> list[str]:
        """The ids without the chain's last server stage yet."""
        stages = self.plan.stages()
        if not stages:
            return []
        last = stages[-1][0]
        return [b for b in backend_ids if (b, last) not in self._emitted]

    def unjoined(self, backend_ids: Sequence[str]) -> dict[str, int]:
        """Per tier that stamps stages: how many of these jobs got no stamp at all from it
        (a tier that only maps ids has no stamps to count)."""
        ids = set(backend_ids)
        tiers = dict.fromkeys(t for _, t, _ in self.plan.stages())
        return {t: len(ids - self._tier_jobs.get(t, set())) for t in tiers}

    def report(self) -> dict[str, Any]:
        """Counters for trial.json: reads, stamps joined per tier, dropped, waiting."""
        return {
            "reads": self.reads,
            "joined": dict(self.joined),
            "dropped_unparsable": self.dropped,
            "waiting_unjoined": self._pending.height,
            "pending_dropped": self.pending_dropped,
            "failed_reads": self.failed_reads,
            "problems": dict(self.problems),
        }
