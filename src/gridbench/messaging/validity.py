"""net's validity rules: when a messaging figure is not to be trusted as it stands.

Pure functions over the pattern summaries (:mod:`gridbench.messaging.summaries`) and the
floor (:mod:`gridbench.messaging.floors`); :func:`validity` is stored as
``metrics["validity"]`` (``valid`` is true when no rule flagged anything) and the report
shows it in the headline and a table.

- **failed_tests**: a ping-pong size, echo series, client count, burst or transfer where
  some tests or repetitions failed: its figures rest on fewer measurements than planned,
  and the survivors may be the lucky ones. The errors are kept with the flag.
- **no_floor**: a native floor measurement (sockperf at a size, iperf3 at a stream count
  and direction) failed in an environment and figures there are left without a ratio, so
  an overhead there can go unseen. A refusal that costs no ratio (sockperf's 14–65507
  byte range, where its next size up or iperf3 stands in) is not flagged.
- **incomplete_burst**: a burst repetition got fewer responses than calls it fired: its
  timeline and gaps describe the calls that came back, not the burst.
- **below_floor**: a figure more than ``floor_factor`` times *better* than the native
  floor of its environment (ratio < 1 / factor). A transport cannot beat the network it
  runs over by that much: the floor or the figure measured something else (a cache, a
  short cut, a different path) and the comparison is void.
- **other_path**: a ping-pong size measured on another path than its environment's floor
  (MUSCLE3's instances dial the addresses they register, so across a remote host's latency
  path they take the direct one): no ratio is given, and the comparison is void.
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
from gridbench.hosts.sampling.compared import CLIENT_BOUND_RULE
from gridbench.messaging.hdr import withheld as withheld_of
from gridbench.messaging.overheads import size_text
from gridbench.messaging.summaries import NETWORK_CONFIGS
from gridbench.schema import validity_document

FAILED_TESTS = "failed_tests"
NO_FLOOR = "no_floor"
INCOMPLETE_BURST = "incomplete_burst"
BELOW_FLOOR = "below_floor"
OTHER_PATH = "other_path"
FEW_SAMPLES = "few_samples"

NET_VALIDITY_RULES: tuple[ValidityRule, ...] = (
    ValidityRule(
        FAILED_TESTS,
        "a ping-pong size, echo series, client count, burst or transfer with failed tests "
        "or repetitions is flagged: its figures rest on fewer measurements than planned.",
    ),
    ValidityRule(
        NO_FLOOR,
        "a native floor (sockperf, iperf3) that could not be measured in an environment, "
        "leaving figures there without a ratio, is flagged: overhead there can go unseen.",
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
        OTHER_PATH,
        "a figure measured on another path than its environment's floor (MUSCLE3's pair "
        "across a remote host's latency path, which it cannot take) is flagged and given no "
        "ratio: the floor is not that figure's network.",
    ),
    ValidityRule(
        FEW_SAMPLES,
        "percentiles are withheld (not flagged) when the sample cannot carry them: p99 "
        "needs 100 samples, p99.9 needs 1000.",
    ),
    CLIENT_BOUND_RULE,  # applied with the samples (gridbench.hosts.sampling.compared)
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


def _unfloored(
    env: str,
    pingpong: Sequence[Mapping[str, Any]],
    echo: Sequence[Mapping[str, Any]],
    transfer: Sequence[Mapping[str, Any]],
) -> list[str]:
    """The figures in ``env`` that have no floor to be set against."""
    out = [
        f"{s['transport']} at {size_text(int(r['size_bytes']))}"
        for s in pingpong
        if s["env"] == env
        for r in s["rows"]
        if r["floor"] is None and r["round_trips"]
    ]
    out += [
        f"{s['transport']} echo ({s['config']})"
        for s in echo
        if s["env"] == env and s["config"] in NETWORK_CONFIGS and s["floor"] is None
    ]
    out += [
        f"{t['tool']} {t['direction']} ×{t['streams']}"
        for t in transfer
        if t["env"] == env and t["floor"] is None and t["reps"]
    ]
    return out


def no_floor_flags(
    floor: Sequence[Mapping[str, Any]],
    pingpong: Sequence[Mapping[str, Any]],
    echo: Sequence[Mapping[str, Any]],
    transfer: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """A flag per environment where a floor measurement failed and figures are left
    without a ratio. A refusal that costs no ratio (sockperf's size range, where the next
    size up or iperf3 stands in) is not flagged; the floor table still shows it."""
    out = []
    for f in floor:
        fails = [x for x in f.get("failed", []) if isinstance(x, Mapping)]
        missing = _unfloored(str(f.get("env")), pingpong, echo, transfer) if fails else []
        if not missing:
            continue
        tools = ", ".join(sorted({str(x.get("tool")) for x in fails}))
        errors = "; ".join(dict.fromkeys(str(x.get("error")) for x in fails))[:300]
        shown = ", ".join(missing[:6]) + (
            f" and {len(missing) - 6} more" if len(missing) > 6 else ""
        )
        out.append(
            {
                "rule": NO_FLOOR,
                "pattern": "floor",
                "name": tools,
                "env": str(f.get("env")),
                "at": f"{len(missing)} figure(s)",
                "detail": f"no ratio for {shown}: {tools} could not be measured ({errors})",
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


def _same_size(floor: Any, size: Any) -> Any:
    """The floor's ratio when it was measured at ``size`` (or is iperf3's), else None."""
    if not isinstance(floor, Mapping):
        return None
    at = floor.get("size_bytes")
    return floor.get("ratio") if at is None or at == size else None


def other_path_flags(pingpong: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A flag per ping-pong size measured on another path than its environment's floor
    (MUSCLE3's pair across a latency path it cannot take): no ratio is given."""
    return [
        {
            "rule": OTHER_PATH,
            **_who("pingpong", s),
            "at": f"size {size_text(int(r['size_bytes']))}",
            "detail": f"{r['floor_void']}: the comparison is void",
        }
        for s in pingpong
        for r in s["rows"]
        if r.get("floor_void")
    ]


def below_floor_flags(
    pingpong: Sequence[Mapping[str, Any]],
    echo: Sequence[Mapping[str, Any]],
    transfer: Sequence[Mapping[str, Any]],
    factor: float,
) -> list[dict[str, Any]]:
    """A flag per figure whose ratio to its floor is below 1 / ``factor``. A floor taken
    at a larger message than the figure's (sockperf's next size up) is not a floor of
    that figure, only a bound on its overhead, so it is not judged here."""
    found = [
        _below(
            "pingpong",
            s,
            f"size {size_text(int(r['size_bytes']))}",
            _same_size(r["floor"], r["size_bytes"]),
            factor,
        )
        for s in pingpong
        for r in s["rows"]
    ]
    found += [
        _below(
            "echo",
            s,
            "all calls",
            _same_size(s["floor"], (s["floor"] or {}).get("payload_bytes")),
            factor,
        )
        for s in echo
    ]
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
        + no_floor_flags(floor, pp, ec, tr)
        + burst_flags(bu)
        + below_floor_flags(pp, ec, tr, factor)
        + other_path_flags(pp)
    )
    return validity_document(
        flags,
        NET_VALIDITY_RULES,
        withheld=withheld(pp, ec, sc),
    )
