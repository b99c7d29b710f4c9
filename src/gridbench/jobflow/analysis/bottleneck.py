"""Which stage limits the flow: the first stage in chain order whose throughput breaks.

Each stage's ratio r = steady throughput / offered rate. Every stage is limited by the
slowest stage upstream of it, so the smallest ratio is not the answer: the bottleneck is
where the ratio *first drops*. With tolerance ``tol`` (default 0.1), walking the chain in
order with ``up`` = the ratio of the nearest upstream stage that has one (1.0 = the
offered rate before the first stage):

- a stage is *broken* when r < 1 - tol (it does not keep up with the offered rate);
- a stage *breaks* when it is broken and r < up * (1 - tol) (it loses more than tol of
  what its upstream delivered);
- the bottleneck is the first stage that breaks. If some stage is broken but none breaks
  (a gradual decline spread over several stages), it is the stage with the largest
  relative drop r/up up to and including the first broken stage.

The finding is *corroborated* when the queue in front of the stage grew while jobs were
offered: growth >= 25% of what a saturated stage implies, offered * (up - r).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gridbench.jobflow import text
from gridbench.jobflow.events.chain import StageChain

DEFAULT_TOLERANCE = 0.1
CORROBORATION = 0.25


@dataclass(frozen=True, slots=True)
class Finding:
    """A bottleneck: the stage, its ratio, and the upstream it is compared with."""

    stage: str
    ratio: float
    upstream: str  # "offered" for the first stage
    upstream_ratio: float


def find_bottleneck(
    stages: Sequence[str], ratios: Mapping[str, float | None], tol: float = DEFAULT_TOLERANCE
) -> Finding | None:
    """The first stage in ``stages`` order whose ratio breaks (see the module docstring)."""
    up_name, up = "offered", 1.0
    candidates: list[Finding] = []
    for s in stages:
        r = ratios.get(s)
        if r is None:
            continue
        f = Finding(s, r, up_name, up)
        candidates.append(f)
        broken = r < 1.0 - tol
        if broken and r < up * (1.0 - tol):
            return f
        if broken:
            return min(candidates, key=lambda c: c.ratio / c.upstream_ratio)
        up_name, up = s, r
    return None


def segment_for_stage(chain: StageChain, stage: str) -> str | None:
    """The segment that ends at ``stage`` (a declared one, component first, else 'a->b')."""
    ends = [g for g in chain.all_segments() if g.end == stage]
    if ends:
        return sorted(ends, key=lambda g: not g.component)[0].name
    for a, b in itertools.pairwise(chain.names()):
        if b == stage:
            return f"{a}->{b}"
    return None


def corroborated(f: Finding, offered: float | None, growth_per_s: float | None) -> bool | None:
    """Whether the queue in front of the stage grew as a saturated stage's would."""
    if offered is None or growth_per_s is None:
        return None
    expected = offered * (f.upstream_ratio - f.ratio)
    return growth_per_s >= CORROBORATION * expected and growth_per_s > 0


def evidence(
    f: Finding, segment: str | None, offered: float | None, growth_per_s: float | None
) -> str:
    """One sentence with the numbers behind a finding."""
    parts = [f"{f.stage} passes {text.pct(f.ratio)} of the offered rate"]
    if offered is not None:
        parts[0] += f" (steady {text.num(f.ratio * offered)}/s of {text.num(offered)}/s)"
    if f.upstream == "offered":
        parts.append("and is the first stage of the chain")
    else:
        parts.append(f"while upstream {f.upstream} passes {text.pct(f.upstream_ratio)}")
    s = " ".join(parts)
    if segment is not None and growth_per_s is not None:
        ok = corroborated(f, offered, growth_per_s)
        verb = "grew" if growth_per_s > 0 else "changed"
        s += f"; jobs waiting in {segment} {verb} by {text.num(growth_per_s)}/s during submission"
        if ok is False:
            s += " (less than a saturated stage would show: not corroborated by its queue)"
    return s + "."


def experiment_bottleneck(points: Sequence[Mapping[str, Any]], chain: StageChain) -> dict[str, Any]:
    """The experiment-level statement: the first rate where a bottleneck shows, and where.

    ``points`` are metrics.json point objects; each carries its ``bottleneck`` and the
    ``bottleneck_finding`` details analysis attaches (ratio, upstream, growth).
    """
    rated = [p for p in points if p.get("offered_rate_per_s") is not None]
    rated.sort(key=lambda p: float(p["offered_rate_per_s"]))
    judged = [p for p in rated if p.get("summary", {}).get("valid_trials", 0) > 0]
    out: dict[str, Any] = {
        "stage": None,
        "segment": None,
        "from_rate_per_s": None,
        "evidence": "",
        "statement": "",
    }
    if not judged:
        out["statement"] = "No valid trial with an offered rate: no bottleneck can be named."
        return out
    for p in judged:
        stage = p.get("bottleneck")
        if stage is None:
            continue
        rate = float(p["offered_rate_per_s"])
        seg = segment_for_stage(chain, stage)
        out.update(stage=stage, segment=seg, from_rate_per_s=rate)
        out["evidence"] = str(p.get("bottleneck_evidence") or "")
        where = f"{stage} (segment {seg})" if seg else stage
        out["statement"] = (
            f"Bottleneck: {where}, first seen at {text.rate(rate)}. {out['evidence']}"
        ).strip()
        return out
    top = float(judged[-1]["offered_rate_per_s"])
    out["statement"] = f"No bottleneck up to the highest rate tried ({text.rate(top)})."
    out["evidence"] = (
        f"every stage kept its steady throughput within tolerance of the offered rate "
        f"at all {len(judged)} rate(s) tried."
    )
    return out
