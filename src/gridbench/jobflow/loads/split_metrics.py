"""Results of the split load model, from a trial's events alone.

A job of the model has ``split`` (``serial`` or ``part``) and ``part`` on its submit
event. The trial's ``model`` object:

- ``serial_s``: the serial job's makespan, its submit to the end its client saw;
- ``parallel_s``: the parts' makespan, the first part's submit to the last part's end;
- ``speedup`` = serial_s ÷ parallel_s; ``efficiency`` = speedup ÷ N;
- ``overhead_s`` = parallel_s − serial_s ÷ N: what the middleware adds to an ideal split
  (``overhead_share`` of parallel_s);
- ``parts``, ``parts_done``, ``serial_done``;
- ``result_equal`` (the check: the parts' combined result has the serial one's sha256;
  null when it could not be made, with ``result_note`` saying why) and a ``statement``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gridbench.jobflow.events.model import STAGE_CLIENT_DONE, STAGE_SUBMIT
from gridbench.jobflow.loads.closed import job_table, over_trials, summarize
from gridbench.lazy import lazy_module

if TYPE_CHECKING:
    import polars as pl
else:  # imported on first use: loading a job-flow spec (gridbench validate) does not pay for it
    pl = lazy_module("polars")

CHECK = "split_check"


def _attr(key: str) -> pl.Expr:
    return pl.col("attrs").str.json_path_match(f"$.{key}")


def _check(events: pl.DataFrame) -> tuple[bool | None, str]:
    rows = events.filter((pl.col("job") == CHECK) & pl.col("attrs").is_not_null())
    if rows.height == 0:
        return None, "no result check was made (combine: none, or the trial stopped)"
    attrs = rows["attrs"][-1]
    equal = pl.Series([attrs]).str.json_path_match("$.equal").item()
    why = pl.Series([attrs]).str.json_path_match("$.why").item()
    if equal in ("true", "false"):
        return equal == "true", "" if equal == "true" else "the parts' result differs"
    return None, str(why or "the check could not be made")


def split_metrics(events: pl.DataFrame) -> dict[str, Any] | None:
    """The split ``model`` object of one trial (see the module docstring)."""
    subs = (
        events.filter(pl.col("stage") == STAGE_SUBMIT)
        .select("job", _attr("split").alias("split"))
        .filter(pl.col("split").is_not_null())
        .unique("job", keep="first")
    )
    if subs.height == 0:
        return None
    tbl = subs.join(job_table(events.filter(pl.col("job").is_in(subs["job"].implode()))), on="job")
    ok = pl.col(STAGE_CLIENT_DONE).is_not_null() & pl.col("done_state").is_null()
    serial = tbl.filter(pl.col("split") == "serial")
    parts = tbl.filter(pl.col("split") == "part")
    s_ok = serial.filter(ok)
    p_ok = parts.filter(ok)
    serial_s = (s_ok[STAGE_CLIENT_DONE][0] - s_ok[STAGE_SUBMIT][0]) / 1e9 if s_ok.height else None
    whole = parts.height > 0 and p_ok.height == parts.height
    parallel_s = (
        (p_ok[STAGE_CLIENT_DONE].max() - p_ok[STAGE_SUBMIT].min()) / 1e9  # type: ignore[operator]
        if whole
        else None
    )
    n = parts.height
    speedup = serial_s / parallel_s if serial_s and parallel_s else None
    overhead = parallel_s - serial_s / n if serial_s is not None and parallel_s and n else None
    equal, note = _check(events)
    out: dict[str, Any] = {
        "kind": "split",
        "parts": n,
        "parts_done": p_ok.height,
        "serial_done": bool(s_ok.height),
        "serial_s": serial_s,
        "parallel_s": parallel_s,
        "speedup": speedup,
        "efficiency": speedup / n if speedup is not None and n else None,
        "overhead_s": overhead,
        "overhead_share": overhead / parallel_s if overhead is not None and parallel_s else None,
        "result_equal": equal,
        "result_note": note,
    }
    out["statement"] = split_statement(out)
    return out


def _num(v: Any) -> float | None:
    if isinstance(v, Mapping):
        v = v.get("mean")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def split_statement(m: Mapping[str, Any], suffix: str = "") -> str:
    """'4 parts: speedup 2.9x (efficiency 73%), overhead 0.41 s; result equal'."""
    sp, eff, oh = _num(m.get("speedup")), _num(m.get("efficiency")), _num(m.get("overhead_s"))
    n = _num(m.get("parts")) or 0
    if sp is None:
        return f"{n:g} parts: no speedup (the serial job or a part did not end done)"
    s = f"{n:g} parts: speedup {sp:.2f}x (efficiency {100 * (eff or 0):.0f}%)"
    if oh is not None:
        s += f", overhead {oh:.3g} s"
    eq = m.get("result_equal")
    mean_eq = _num(eq) if isinstance(eq, Mapping) else None
    if eq is True or mean_eq == 1.0:
        s += "; the parts' result equals the serial one"
    elif eq is False or (mean_eq is not None and mean_eq < 1.0):
        s += "; the parts' result DIFFERS from the serial one"
    else:
        s += f"; result not checked ({m.get('result_note') or 'no check'})"
    return s + suffix


def split_summary(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The point's ``summary.model``: every number of the trials' objects across them."""
    out, models = summarize(trials, "split", ())
    if models:
        out.pop("pooled", None)
        eqs = [m.get("result_equal") for m in models]
        out["result_equal"] = None if any(e is None for e in eqs) else all(e is True for e in eqs)
        out["result_note"] = next(
            (str(m.get("result_note")) for m in models if m.get("result_note")), ""
        )
        out["statement"] = split_statement(out, over_trials(models))
    return out
