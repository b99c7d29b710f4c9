"""net's validity rules: when a messaging figure is not to be trusted as it stands.

Pure functions over the pattern summaries (:mod:`gridbench.messaging.summaries`) and the
floor (:mod:`gridbench.messaging.floors`); :func:`validity` is stored as
``metrics["validity"]`` (``valid`` is true when no rule flagged anything) and the report
shows it in the headline and a table.

- **failed_tests**: a ping-pong size, echo series, client count, burst or transfer where
  some tests or repetitions failed: its figures rest on fewer measurements than planned,
  and the survivors may be the lucky ones. The errors are kept with the flag.
- **no_floor**: a native floor measurement (sockperf at a size, iperf3 at a stream count
  and direction) failed in an environment: the figures there lack their ratio (or fall
  back to another floor figure), so an overhead there can go unseen.
- **incomplete_burst**: a burst repetition got fewer responses than calls it fired: its
  timeline and gaps describe the calls that came back, not the burst.
- **below_floor**: a figure more than ``floor_factor`` times *better* than the native
  floor of its environment (ratio < 1 / factor). A transport cannot beat the network it
  runs over by that much: the floor or the figure measured something else (a cache, a
  short cut, a different path) and the comparison is void.
- **few_samples** (a policy, no flag): a percentile is only reported from enough samples
  (p99 from 100, p99.9 from 1000, :mod:`gridbench.messaging.hdr`); one that is not is
  withheld (null) and listed under ``withheld``, never shown as a guess.

No clock-resolution rule: times are ``time.perf_counter_ns`` on the client, 1 ns
resolution on Linux, four orders below the smallest RTT measured (~10 µs on loopback).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.family import ValidityRule
from gridbench.messaging.hdr import withheld as withheld_of
from gridbench.messaging.overheads import size_text

FAILED_TESTS = "failed_tests"
NO_FLOOR = "no_floor"
INCOMPLETE_BURST = "incomplete_burst"
BELOW_FLOOR = "below_floor"
FEW_SAMPLES = "few_samples"

NET_VALIDITY_RULES: tuple[ValidityRule, ...] = (
    ValidityRule(
        FAILED_TESTS,
        "a ping-pong size, echo series, client count, burst or transfer with failed tests "
        "or repetitions is flagged: its figures rest on fewer measurements than planned.",
    ),
    ValidityRule(
        NO_FLOOR,
        "a native floor (sockperf, iperf3) that could not be measured in an environment is "
        "flagged: the figures there have no ratio to the network, so overhead can go unseen.",
    ),
    ValidityRule(
        INCOMPLETE_BURST,
        "a burst that got fewer responses than calls is flagged: its timeline and gaps "
        "describe only the calls that came back.",
    ),
    ValidityRule(
        BELOW_FLOOR,
        "a figure more than floor_factor times better than the native floor is flagged: a "
        "transport cannot beat its network by that much, so one of the two measured "
        "something else.",
    ),
    ValidityRule(
        FEW_SAMPLES,
        "percentiles are withheld (not flagged) when the sample cannot carry them: p99 "
        "needs 100 samples, p99.9 needs 1000.",
    ),
)


def _who(pattern: str, s: Mapping[str, Any]) -> dict[str, Any]:
    name = s.get("transport", s.get("tool"))
    out = {"pattern": pattern, "name": str(name), "env": str(s.get("env"))}
    if "config" in s:
        out["config"] = str(s["config"])
    return out


def _failed(
    pattern: str, s: Mapping[str, Any], at: str, failed: int, total: int, errors: Any
) -> dict[str, Any]:
    errs = "; ".join(str(e) for e in errors or [])[:300]
    return {
        "rule": FAILED_TESTS,
        **_who(pattern, s),
        "at": at,
        "failed": failed,
        "detail": f"{failed} of {total} failed" + (f": {errs}" if errs else ""),
    }


def failed_flags(
    pingpong: Sequence[Mapping[str, Any]],
    echo: Sequence[Mapping[str, Any]],
    scaling: Sequence[Mapping[str, Any]],
    burst: Sequence[Mapping[str, Any]],
    transfer: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """A flag per size, series length, client count, burst or transfer with failures."""
    out = []
    for s in pingpong:
        for r in s["rows"]:
            if r["failed_tests"]:
                at = f"size {size_text(int(r['size_bytes']))}"
                out.append(_failed("pingpong", s, at, r["failed_tests"], r["tests"], r["errors"]))
    for s in echo:
        for r in s["rows"]:
            if r["failed_reps"]:
                n = r["failed_reps"] + r["reps"]
                out.append(
                    _failed("echo", s, f"{r['calls']} calls", r["failed_reps"], n, r["errors"])
                )
    for s in scaling:
        for p in s["points"]:
            if p["failed_reps"]:
                n = p["failed_reps"] + p["reps"]
                at = f"{p['clients']} clients"
                out.append(_failed("echo_scaling", s, at, p["failed_reps"], n, p["errors"]))
    for b in burst:
        if b["failed_reps"]:
            n = b["failed_reps"] + b["reps"]
            out.append(_failed("burst", b, f"{b['calls']} calls", b["failed_reps"], n, b["errors"]))
    for t in transfer:
        if t["failed_reps"]:
            n = t["failed_reps"] + t["reps"]
            at = f"{t['direction']}, {t['streams']} streams"
            out.append(_failed("transfer", t, at, t["failed_reps"], n, t["errors"]))
    return out


def no_floor_flags(floor: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A flag per failed floor measurement in each environment."""
    out = []
    for f in floor:
        for x in f.get("failed", []):
            if x.get("size_bytes") is not None:
                at = f"size {size_text(int(x['size_bytes']))}"
            elif x.get("streams") is not None:
                at = f"-P {x['streams']} {x.get('direction') or ''}".strip()
            else:
                at = "every figure"
            out.append(
                {
                    "rule": NO_FLOOR,
                    "pattern": "floor",
                    "name": str(x.get("tool")),
                    "env": str(f.get("env")),
                    "at": at,
                    "detail": f"{x.get('tool')} could not be measured: {str(x.get('error'))[:300]}",
                }
            )
    return out


def burst_flags(burst: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A flag per burst where some repetition got fewer responses than calls."""
    out = []
    for b in burst:
        got = b.get("responses_min")
        if got is not None and got < b["calls"]:
            out.append(
                {
                    "rule": INCOMPLETE_BURST,
                    **_who("burst", b),
                    "at": f"{b['calls']} calls",
                    "detail": f"only {got} of {b['calls']} responses arrived in a repetition",
                }
            )
    return out


def _below(
    pattern: str, s: Mapping[str, Any], at: str, ratio: Any, factor: float
) -> dict[str, Any] | None:
    if not isinstance(ratio, int | float) or ratio <= 0 or ratio >= 1.0 / factor:
        return None
    return {
        "rule": BELOW_FLOOR,
        **_who(pattern, s),
        "at": at,
        "ratio": float(ratio),
        "detail": (
            f"{1.0 / ratio:.1f}× better than the native floor (limit {factor:g}×): the floor "
            "or the figure measured something else"
        ),
    }


def below_floor_flags(
    pingpong: Sequence[Mapping[str, Any]],
    echo: Sequence[Mapping[str, Any]],
    transfer: Sequence[Mapping[str, Any]],
    factor: float,
) -> list[dict[str, Any]]:
    """A flag per figure whose ratio to its floor is below 1 / ``factor``."""
    found = [
        _below(
            "pingpong",
            s,
            f"size {size_text(int(r['size_bytes']))}",
            (r["floor"] or {}).get("ratio"),
            factor,
        )
        for s in pingpong
        for r in s["rows"]
    ]
    found += [_below("echo", s, "all calls", (s["floor"] or {}).get("ratio"), factor) for s in echo]
    found += [
        _below(
            "transfer",
            t,
            f"{t['direction']}, {t['streams']} streams",
            (t["floor"] or {}).get("ratio"),
            factor,
        )
        for t in transfer
    ]
    return [f for f in found if f is not None]


def withheld(
    pingpong: Sequence[Mapping[str, Any]],
    echo: Sequence[Mapping[str, Any]],
    scaling: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Where percentiles were withheld for want of samples (the few_samples policy)."""
    out = []
    for s in pingpong:
        for r in s["rows"]:
            if w := withheld_of(r["round_trips"]):
                at = f"size {size_text(int(r['size_bytes']))}"
                out.append(
                    {**_who("pingpong", s), "at": at, "n": r["round_trips"], "percentiles": w}
                )
    for s in echo:
        for r in s["rows"]:
            if w := withheld_of(r["n"]):
                out.append(
                    {**_who("echo", s), "at": f"{r['calls']} calls", "n": r["n"], "percentiles": w}
                )
    for s in scaling:
        for p in s["points"]:
            if w := withheld_of(p["n"]):
                at = f"{p['clients']} clients"
                out.append({**_who("echo_scaling", s), "at": at, "n": p["n"], "percentiles": w})
    return out


def validity(
    summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    floor: Sequence[Mapping[str, Any]],
    factor: float,
) -> dict[str, Any]:
    """``metrics["validity"]``: ``valid``, the ``flags`` of every rule, the ``rules``
    applied and the percentiles ``withheld``. ``summaries`` holds the pattern lists
    (pingpong, echo, echo_scaling, burst, transfer)."""
    pp, ec, sc = summaries["pingpong"], summaries["echo"], summaries["echo_scaling"]
    bu, tr = summaries["burst"], summaries["transfer"]
    flags = (
        failed_flags(pp, ec, sc, bu, tr)
        + no_floor_flags(floor)
        + burst_flags(bu)
        + below_floor_flags(pp, ec, tr, factor)
    )
    return {
        "valid": not flags,
        "flags": flags,
        "rules": [{"name": r.name, "description": r.description} for r in NET_VALIDITY_RULES],
        "withheld": withheld(pp, ec, sc),
    }
