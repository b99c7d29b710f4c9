"""The id chain: server records tied to gridbench jobs, tier by tier (pure, no I/O).

The client's ``submit_ack`` ``backend_id`` is the first tier's id; each tier's
``job_submission`` names the next tier's id (``next_id``). A record whose tier id is not
known yet stays pending and is joined on a later call, once it is. The join is done with
polars.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Final

import polars as pl

from gridbench.jobflow.events.edgi.frames import RAW_SCHEMA
from gridbench.jobflow.events.model import EVENT_SCHEMA, STAGE_SUBMIT_ACK

_MAP_SCHEMA: Final = pl.Schema({"id": pl.String, "job": pl.String})
#: the id map of the client's jobs (the first tier's ids); other maps are named "TIER->"
_CLIENT: Final = "__client__"


def client_id_map(client_events: pl.DataFrame) -> pl.DataFrame:
    """(id, job) pairs: the first tier's id of each client job, from ``submit_ack`` attrs."""
    return (
        client_events.lazy()
        .filter(pl.col("stage") == STAGE_SUBMIT_ACK)
        .select(
            pl.col("attrs").str.json_path_match("$.backend_id").alias("id"),
            pl.col("job"),
        )
        .filter(pl.col("id").is_not_null() & (pl.col("id") != ""))
        .collect()
        .cast(dict(_MAP_SCHEMA))  # type: ignore[arg-type]
    )


def _finish_events(joined: pl.DataFrame) -> pl.DataFrame:
    return joined.select(
        pl.col("job"),
        pl.col("stage"),
        pl.col("t_ns"),
        pl.col("tier").alias("source"),
        pl.col("precision_ns"),
        pl.col("tier").alias("agent"),
        pl.lit(0, pl.Int64).alias("clock_offset_ns"),
        pl.col("attrs"),
    ).cast(dict(EVENT_SCHEMA))  # type: ignore[arg-type]


class IdChain:
    """Id maps learnt so far, the server records still pending, and join counts."""

    def __init__(self) -> None:
        self.pending = pl.DataFrame(schema=RAW_SCHEMA)
        #: server ids claimed by two different jobs (the first job is kept)
        self.conflicts = 0
        self._maps: dict[str, pl.DataFrame] = {}
        self._joined_by: dict[tuple[str, str], int] = {}  # (tier, "own"|"upstream") -> records

    def add_client_events(self, client_events: pl.DataFrame) -> None:
        """Learn client job -> first-tier id pairs (``submit_ack`` events); repeats are fine."""
        self._add_map(_CLIENT, client_id_map(client_events))

    def add_pending(self, raws: Sequence[pl.DataFrame]) -> None:
        """Queue new tier events (:data:`RAW_SCHEMA`) for the next :meth:`join`."""
        self.pending = pl.concat([self.pending, *raws], how="vertical")

    def pending_by_tier(self) -> dict[str, int]:
        """Records still pending, per tier."""
        if not self.pending.height:
            return {}
        counts = self.pending.group_by("tier", maintain_order=True).len().iter_rows()
        return {t: n for t, n in counts}

    def joined_by(self) -> dict[str, dict[str, int]]:
        """Per tier, the records joined so far by its own id and by the upstream id."""
        out: dict[str, dict[str, int]] = {}
        for (tier, how), n in self._joined_by.items():
            out.setdefault(tier, {"own": 0, "upstream": 0})[how] = n
        return out

    def join(self, tiers: Sequence[str], held: Collection[str] = ()) -> pl.DataFrame:
        """Join every pending record whose tier id is known; keep the rest pending.

        ``tiers`` is the chain, nearest component first; records of a tier in ``held``
        stay pending whatever is known.
        """
        out: list[pl.DataFrame] = []
        rest: list[pl.DataFrame] = []
        by_tier = self.pending.partition_by("tier", as_dict=True)
        for k, tier in enumerate(tiers):
            part = by_tier.get((tier,))
            if part is None:
                continue
            if tier in held:
                rest.append(part)
                continue
            joined, left = self._join_tier(tiers, k, part)
            rest.append(left)
            if joined is not None:
                out.append(joined)
        known = set(tiers)
        rest.extend(p for (t,), p in by_tier.items() if t not in known)
        self.pending = pl.concat(rest, how="vertical") if rest else pl.DataFrame(schema=RAW_SCHEMA)
        if not out:
            return pl.DataFrame(schema=EVENT_SCHEMA)
        return _finish_events(pl.concat(out, how="vertical")).sort("t_ns")

    def _join_tier(
        self, tiers: Sequence[str], k: int, part: pl.DataFrame
    ) -> tuple[pl.DataFrame | None, pl.DataFrame]:
        """(records of tier ``k`` joined to a job or None, the rest) and learn its next ids."""
        tier = tiers[k]
        # a tier's record names the job by its own id (the one the tier upstream
        # handed it) or, as some components do, by that upstream tier's own id
        joined_parts = []
        for how, m in (("own", self._id_map(tiers, k)), ("upstream", self._upstream_map(tiers, k))):
            if m is None or part.is_empty():
                continue
            got = part.join(m, on="id", how="inner")
            part = part.join(m, on="id", how="anti")
            if got.height:
                key = (tier, how)
                self._joined_by[key] = self._joined_by.get(key, 0) + got.height
                joined_parts.append(got)
        if not joined_parts:
            return None, part
        joined = pl.concat(joined_parts, how="vertical")
        nxt = joined.filter(
            (pl.col("stage") == tier + "_submit") & pl.col("next_id").is_not_null()
        ).select(pl.col("next_id").alias("id"), pl.col("job"))
        self._add_map(tier + "->", nxt)
        return joined, part

    def _add_map(self, tier: str, new: pl.DataFrame) -> None:
        if new.is_empty():
            return
        # two jobs may claim one id within a batch (a whole ingest is one batch) as well
        # as across batches; the same job repeating its id is no clash
        self.conflicts += (
            new.group_by("id").agg(pl.col("job").n_unique()).filter(pl.col("job") > 1).height
        )
        new = new.unique(subset="id", keep="first", maintain_order=True)
        old = self._maps.get(tier)
        if old is None:
            self._maps[tier] = new
            return
        clash = new.join(old, on="id", how="inner").filter(pl.col("job") != pl.col("job_right"))
        self.conflicts += clash.height
        self._maps[tier] = pl.concat([old, new.join(old, on="id", how="anti")], how="vertical")

    def _id_map(self, tiers: Sequence[str], index: int) -> pl.DataFrame | None:
        return self._maps.get(_CLIENT if index == 0 else tiers[index - 1] + "->")

    def _upstream_map(self, tiers: Sequence[str], index: int) -> pl.DataFrame | None:
        """(id, job) of the upstream tier's own ids, for a tier that reports jobs under
        the id its upstream knows them by. The first tier's upstream is the client, whose
        id for a job (the submit_ack backend_id) is the first tier's own id: it has none."""
        return self._id_map(tiers, index - 1) if index >= 1 else None

    def unjoined_warning(self, tiers: Sequence[str], tier: str, n: int) -> str:
        """Why ``n`` pending records of ``tier`` could not be joined, with sample ids."""
        ids = (
            self.pending.filter(pl.col("tier") == tier).get_column("id").unique(maintain_order=True)
        )
        sample = ", ".join(ids.head(3).to_list())
        if tier not in tiers:
            why = "this tier is not in the chain"
        elif tiers.index(tier) == 0:
            why = (
                "they are not the backend_id of any client submit_ack (other users' jobs, "
                "or client events from another trial?)"
            )
        else:
            prev = tiers[tiers.index(tier) - 1]
            why = (
                f"no {prev} job_submission names them in <job_id_bridge> (missing {prev} reports?)"
            )
        return (
            f"{n} {tier} record(s) could not be joined to a gridbench job: {why}; "
            f"e.g. {sample}. They are counted as unjoined and left out of the events"
        )


def joined_by_lines(joined_by: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One line per tier saying which id its records were joined by, e.g. ``tier bridge:
    40 records joined by upstream id`` (``ReportCollector.joined_by`` or ingest.json's
    ``stats.joined_by``)."""
    out = []
    for tier, d in joined_by.items():
        own, up = int(d.get("own", 0)), int(d.get("upstream", 0))
        if up and own:
            out.append(
                f"tier {tier}: {own + up} records joined, {own} by its own id and {up} by "
                "the upstream id (mixed)"
            )
        elif up:
            out.append(f"tier {tier}: {up} records joined by upstream id")
        elif own:
            out.append(f"tier {tier}: {own} records joined by own id")
    return out
