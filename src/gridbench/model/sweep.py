"""What ``gridbench model predict --sweep`` varies: the offered rate, the job size and any
field of the model (``tiers.workers.slots``, ``status_update.policy``, ...)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from gridbench.errors import SpecError
from gridbench.jobflow.api import parse_rate
from gridbench.model.engine import Offer
from gridbench.model.spec import ChainModel
from gridbench.specload import parse_yaml, set_path, validation_error
from gridbench.units import parse_duration, parse_size

LOAD_KEYS = ("rate", "job.runtime", "job.output_size", "job.input_size")
FIX = (
    "write KEY=V1,V2 with KEY rate, job.runtime or a model field such as "
    "chain.STAGE.concurrency (docs/model.md)"
)


@dataclass(frozen=True, slots=True)
class Window:
    """The trial shape every point shares: submission window, drain, arrivals."""

    duration_s: float = 10.0
    drain_s: float = 60.0
    arrival: Literal["uniform", "poisson"] = "uniform"
    rate_per_s: float = 1.0
    runtime_s: float | None = None  # the jobs' size when not swept (None: the model's)


@dataclass(frozen=True, slots=True)
class Point:
    values: dict[str, str]
    model: ChainModel
    offer: Offer


def parse_sweeps(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``KEY=V1,V2`` strings as (key, values); one clear error for a malformed one."""
    out: list[tuple[str, list[str]]] = []
    for item in items:
        key, sep, vals = item.partition("=")
        values = [v.strip() for v in vals.split(",") if v.strip()]
        if not sep or not key.strip() or not values:
            raise SpecError(f"cannot read {item!r}", where="--sweep", fix=FIX)
        out.append((key.strip(), values))
    return out


#: a declared limit says so (the fit writes ``inferred``)
_SOURCES = {"concurrency": "concurrency_source", "slots": "slots_source",
            "queue_limit": "queue_limit_source", "interval_s": "source"}  # fmt: skip


def _path(data: dict[str, Any], key: str) -> list[str]:
    """``key`` as a path into the model's data; ``chain.STAGE`` names a step by its stage."""
    parts = key.split(".")
    chain = data.get("chain")
    if len(parts) > 1 and parts[0] == "chain" and isinstance(chain, list):
        named = [i for i, st in enumerate(chain) if st.get("stage") == parts[1]]
        if named:
            parts[1] = str(named[0])
    return parts


def with_value(model: ChainModel, key: str, value: str, where: str = "--sweep") -> ChainModel:
    """The model with the field ``key`` (``status_update.policy``, ``chain.STAGE.concurrency``)
    set to ``value``; a limit set this way is ``declared``."""
    data = model.model_dump(mode="json", by_alias=True)
    parts = _path(data, key)
    node: Any = data
    for p in parts[:-1]:
        if isinstance(node, list) and p.isdigit() and int(p) < len(node):
            node = node[int(p)]
        else:
            node = node.get(p) if isinstance(node, dict) else None
    if not isinstance(node, dict) or parts[-1] not in node:
        raise SpecError(f"the model has no field {key!r}", where=where, fix=FIX)
    set_path(data, parts, parse_yaml(value, where))
    source = _SOURCES.get(parts[-1])
    if source is not None and source in node:
        node[source] = "declared"
    try:
        return ChainModel.model_validate(data)
    except ValidationError as exc:
        raise SpecError(validation_error(exc, None, f"{where} {key}={value}").message) from None


def points(model: ChainModel, sweeps: Sequence[tuple[str, list[str]]], w: Window) -> list[Point]:
    """The cartesian product of the sweeps, each as a model and an offer."""
    out: list[Point] = []
    keys = [k for k, _ in sweeps]
    for combo in itertools.product(*[v for _, v in sweeps]) if sweeps else [()]:
        m, rate, runtime = model, w.rate_per_s, w.runtime_s
        size: dict[str, int | None] = {"in": None, "out": None}
        for key, value in zip(keys, combo, strict=True):
            try:
                if key == "rate":
                    rate = parse_rate(value)
                elif key == "job.runtime":
                    runtime = parse_duration(value)
                elif key in ("job.output_size", "output_size", "job.input_size", "input_size"):
                    size["out" if "output" in key else "in"] = parse_size(value)
                else:
                    m = with_value(m, key, value)
            except SpecError:
                raise
            except (ValueError, TypeError) as exc:
                raise SpecError(f"{key}={value}: {exc}", where="--sweep", fix=FIX) from None
        if rate <= 0:
            raise SpecError(f"rate {rate:g}/s is not positive", where="--sweep", fix=FIX)
        offer = Offer(
            rate,
            w.duration_s,
            w.duration_s + w.drain_s,
            w.arrival,
            runtime,
            input_bytes=size["in"],
            output_bytes=size["out"],
        )
        out.append(Point(dict(zip(keys, combo, strict=True)), m, offer))
    return out
