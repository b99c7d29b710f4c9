"""Helpers for the psij backend tests: run a spec through the real runner, read a trial."""

from __future__ import annotations

import itertools

import polars as pl

from gridbench.jobflow.backends.psij.backend import PsijBackend
from gridbench.jobflow.backends.registry import create_backend

CHAIN = ["submit", "psij_queued", "psij_active", "psij_end", "client_done"]


def psij_backend(**options: object) -> PsijBackend:
    """A psij backend made through the registry, as a spec would."""
    b = create_backend("psij", dict(options))
    assert isinstance(b, PsijBackend)
    return b


def assert_chain_ordered(ev: pl.DataFrame, jobs: int) -> pl.DataFrame:
    """Every job has every stage of the chain, once, in order; returns the wide table."""
    counts = dict(ev.filter(pl.col("stage").is_in(CHAIN)).group_by("stage").len().iter_rows())
    assert counts == dict.fromkeys(CHAIN, jobs), f"stage counts {counts}, expected {jobs} each"
    wide = ev.pivot(on="stage", index="job", values="t_ns", aggregate_function="first")
    assert wide.height == jobs
    for a, b in itertools.pairwise(CHAIN):
        assert (wide[a] <= wide[b]).all(), f"{a} after {b}"
    return wide


def acked_ids(ev: pl.DataFrame) -> list[str]:
    """Backend ids of the acknowledged submissions."""
    acks = ev.filter(pl.col("stage") == "submit_ack")
    return [str(x) for x in acks["attrs"].str.json_path_match("$.backend_id").to_list()]
