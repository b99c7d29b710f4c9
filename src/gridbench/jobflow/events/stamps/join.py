"""Join every tier's stamps to the run's jobs (pure, columnar).

A tier keyed by ``backend`` meets a job through the backend's id (or the part of it
``backend_pattern`` extracts: A-REX's job id at the end of arcsub's URL), one keyed by
``name`` through gridbench's job name (a file named before submit). A tier keyed by
``<tier>.local_id`` meets it through the local id that other tier recorded for the job
(A-REX's ``LocalJobID`` is the Slurm job id). Stamps that meet no job yet are kept by the
caller and offered again: the local id is often recorded after the lower tier's first
stamp (Slurm logs the submission before A-REX writes the id it got back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from gridbench.jobflow.events.stamps.declare import StampPlan

JOINED_SCHEMA = pl.Schema(
    {
        "backend_id": pl.String,
        "tier": pl.String,
        "stage": pl.String,
        "t_ns": pl.Int64,
        "precision_ns": pl.Int64,
    }
)


def tier_order(plan: StampPlan) -> list[str]:
    """Tiers so that each comes after the tier whose local ids it joins through."""
    via: dict[str, str | None] = {}
    for s in plan.sources:
        via.setdefault(s.tier, s.via)
    out: list[str] = []
    while len(out) < len(via):
        ready = [t for t, v in via.items() if t not in out and (v is None or v in out)]
        if not ready:  # a cycle: the rest can never join; keep them last
            out += [t for t in via if t not in out]
            break
        out += ready
    return out


def backend_keys(
    plan: StampPlan, backend_ids: Sequence[str], names: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """``(tier, key, backend_id)``: each ``backend``-keyed tier's id of each backend id,
    and each ``name``-keyed tier's (``names``: backend id -> gridbench's job name)."""
    ids = pl.Series("backend_id", list(backend_ids), dtype=pl.String)
    named = pl.Series("key", [(names or {}).get(i) for i in backend_ids], dtype=pl.String)
    frames = []
    done: set[str] = set()
    for s in plan.sources:
        if s.via is not None or s.tier in done:
            continue
        done.add(s.tier)
        if s.key == "name":
            key = named
        elif s.backend_pattern is None:
            key = ids
        else:
            key = ids.str.extract_groups(s.backend_pattern).struct.field("id")
        frames.append(pl.DataFrame({"tier": s.tier, "key": key, "backend_id": ids}))
    if not frames:
        return pl.DataFrame(schema={"tier": pl.String, "key": pl.String, "backend_id": pl.String})
    return pl.concat(frames).filter(pl.col("key").is_not_null()).unique(["tier", "key"])


def local_keys(stamps: pl.DataFrame, joined: pl.DataFrame) -> pl.DataFrame:
    """``(tier, key, backend_id)``: the local ids joined stamps recorded, under the tier
    name ``<tier>.local_id`` that lower tiers' ``key`` uses."""
    pairs = (
        stamps.filter(pl.col("local_id").is_not_null()).select("tier", "id", "local_id").unique()
    )
    ids = joined.select("tier", "id", "backend_id").unique(["tier", "id"])
    keys = pairs.join(ids, on=["tier", "id"]).select(
        (pl.col("tier") + ".local_id").alias("tier"),
        pl.col("local_id").alias("key"),
        "backend_id",
    )
    # a local id naming more than one job cannot attribute a stamp: it is not a key
    return keys.filter(pl.col("backend_id").n_unique().over("tier", "key") == 1)


def join_stamps(
    plan: StampPlan, stamps: pl.DataFrame, keys: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(stamps that met a job with their ``backend_id``, stamps that did not, every key).

    ``keys`` is ``(tier, key, backend_id)``: the backend keys and the local ids learnt in
    earlier sweeps; the returned keys add those learnt now.
    """
    key_of: dict[str, str] = {}
    for s in plan.sources:  # the sources of one tier share its key (parse_plan checks)
        key_of.setdefault(s.tier, s.key if s.via is not None else s.tier)
    joined: list[pl.DataFrame] = []
    left: list[pl.DataFrame] = []
    all_keys = keys
    for tier in tier_order(plan):
        part = stamps.filter(pl.col("tier") == tier)
        k = all_keys.filter(pl.col("tier") == key_of[tier]).select("key", "backend_id")
        hit = part.join(k, left_on="id", right_on="key", how="inner")
        joined.append(hit)
        left.append(part.join(k, left_on="id", right_on="key", how="anti"))
        all_keys = pl.concat([all_keys, local_keys(part, hit)]).unique(["tier", "key"])
    out = pl.concat(joined) if joined else pl.DataFrame(schema=JOINED_SCHEMA)
    rest = pl.concat(left) if left else stamps.clear()
    return out.select(JOINED_SCHEMA.names()), rest, all_keys
