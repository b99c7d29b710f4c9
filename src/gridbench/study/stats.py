"""Paired comparisons between tools, their multiple-comparison correction, and the power
analysis that sets the cohort size (the seed's "one-tailed paired t-test ... a minimum of
27 participants").

Pure functions. Choices, stated once:

- **Per participant and tool**, a metric is one number: the SUS score; for time, the mean
  seconds per task over that tool's timed tasks (the seed's "mean task time"; a mean, not
  a total, so a missing task does not shorten a participant's time and tools with
  different task counts stay comparable); failure, difficulty and satisfaction are the
  means of that tool's task answers.
- **Direction**: "better" is higher SUS and satisfaction, lower time, failure and
  difficulty. ``better: a`` tests ``a - b > 0`` for the first two and ``a - b < 0`` for the
  rest (``scipy.stats.ttest_rel(a, b, alternative=...)``), ``better: b`` the reverse,
  ``better: either`` is two-sided. ``analysis.tails: 2`` makes every test two-sided.
- **Effect size** d_z = mean(a - b) / sd(a - b) (sample sd), signed as a - b; its 95% CI
  inverts the noncentral t distribution of t = d_z sqrt(n) (exact for normal
  differences, Cumming & Finch 2001).
- **Correction**: per comparison, across its metrics (``analysis.correction``, Holm by
  default, ``statsmodels.stats.multitest.multipletests``); a test without a p-value takes
  no part.
- **Power**: ``statsmodels.stats.power.TTestPower`` (the paired test is a one-sample test
  of the differences). The effect size is the stated one, else the smallest observed
  |d_z| among the declared comparisons' SUS tests (all metrics when no SUS test has one):
  the cohort that would detect every observed SUS difference.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray
from scipy import optimize
from scipy import stats as sst

from gridbench.study.model import METRICS, Comparison, StudySpec

#: Metrics where a higher value is better (the rest: lower is better).
HIGHER_IS_BETTER = frozenset({"sus", "satisfaction"})
Alternative = Literal["greater", "less", "two-sided"]
#: The seed's cohort (one-tailed paired t-test, power 0.8, alpha 0.05).
SEED_N = 27


def alternative(better: str, metric: str, tails: int = 1) -> Alternative:
    """scipy's ``alternative`` for ``ttest_rel(a, b)`` under the hypothesis ``better``."""
    if better == "either" or tails == 2:
        return "two-sided"
    a_higher = (better == "a") == (metric in HIGHER_IS_BETTER)
    return "greater" if a_higher else "less"


def participant_metrics(sus: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """One row per participant and tool: sus, time, failure, difficulty, satisfaction
    (null where the participant gave no such answer for that tool). ``sus`` holds a
    ``score`` column per (participant, tool)."""
    per_task = tasks.group_by("participant", "tool").agg(
        pl.col("seconds").mean().alias("time"),
        pl.col("failure").cast(pl.Float64).mean().alias("failure"),
        pl.col("difficulty").cast(pl.Float64).mean().alias("difficulty"),
        pl.col("satisfaction").cast(pl.Float64).mean().alias("satisfaction"),
    )
    scores = sus.select("participant", "tool", pl.col("score").cast(pl.Float64).alias("sus"))
    return scores.join(per_task, on=["participant", "tool"], how="full", coalesce=True).sort(
        "participant", "tool"
    )


def pairs(
    frame: pl.DataFrame, a: str, b: str, metric: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The values of ``metric`` for ``a`` and ``b`` from the participants who have both."""
    wide = frame.filter(
        pl.col("tool").is_in([a, b]) & pl.col(metric).is_not_null() & pl.col(metric).is_not_nan()
    ).pivot(on="tool", index="participant", values=metric)
    if a not in wide.columns or b not in wide.columns:
        return np.empty(0), np.empty(0)
    wide = wide.drop_nulls([a, b]).sort("participant")
    return wide[a].to_numpy().astype(np.float64), wide[b].to_numpy().astype(np.float64)


def dz_interval(dz: float, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The CI of d_z from the noncentral t: the noncentrality parameters under which the
    observed t = d_z sqrt(n) sits at the upper and lower tail quantiles, over sqrt(n)."""
    if n < 2 or not math.isfinite(dz):
        return None
    df, t_obs, tail = n - 1, dz * math.sqrt(n), (1.0 - confidence) / 2.0

    def at(q: float) -> float:
        # ncp where P(T <= t_obs) = q; cdf falls as ncp rises
        f = lambda ncp: float(sst.nct.cdf(t_obs, df, ncp)) - q  # noqa: E731
        span = 10.0 + abs(t_obs) * 2
        return float(optimize.brentq(f, t_obs - span, t_obs + span, xtol=1e-10))

    try:
        return at(1.0 - tail) / math.sqrt(n), at(tail) / math.sqrt(n)
    except ValueError:
        return None


def paired_test(a: NDArray[np.float64], b: NDArray[np.float64], alt: Alternative) -> dict[str, Any]:
    """t, df, p, d_z and its CI, n and the means of a paired sample (None where undefined:
    fewer than 2 pairs, or differences all equal)."""
    n = len(a)
    out: dict[str, Any] = {
        "n": n,
        "mean_a": float(np.mean(a)) if n else None,
        "mean_b": float(np.mean(b)) if n else None,
        "t": None,
        "df": n - 1 if n >= 2 else None,
        "p": None,
        "dz": None,
        "dz_ci95": None,
    }
    if n < 2:
        return out
    d = a - b
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sst.ttest_rel(a, b, alternative=alt)
    dz = float(np.mean(d)) / sd
    ci = dz_interval(dz, n)
    out.update(t=float(res.statistic), p=float(res.pvalue), dz=dz, dz_ci95=list(ci) if ci else None)
    return out


def correct(
    pvalues: Sequence[float | None], method: str, alpha: float
) -> list[tuple[float | None, bool | None]]:
    """(adjusted p, significant) per p-value; None stays None. ``method`` is
    holm, bonferroni, fdr_bh or none."""
    have = [(i, p) for i, p in enumerate(pvalues) if p is not None]
    out: list[tuple[float | None, bool | None]] = [(None, None)] * len(pvalues)
    if not have:
        return out
    ps = np.array([p for _, p in have], dtype=np.float64)
    if method == "none":
        adj, rej = ps, ps < alpha
    else:
        from statsmodels.stats.multitest import multipletests

        rej, adj, _, _ = multipletests(ps, alpha=alpha, method=method)
    for (i, _), p, r in zip(have, adj, rej, strict=True):
        out[i] = (float(p), bool(r))
    return out


def measured(spec: StudySpec) -> list[str]:
    """The metrics the study's questionnaires collect (time always: Start/Stop or an
    imported time), in Table 2's order."""
    q = spec.questionnaires
    off = {
        *(() if q.sus else ("sus",)),
        *(() if q.likert else ("difficulty", "satisfaction")),
        *(() if q.failure_scale else ("failure",)),
    }
    return [m for m in METRICS if m not in off]


def comparison_tests(frame: pl.DataFrame, spec: StudySpec) -> list[dict[str, Any]]:
    """Every declared comparison x metric the study collects: the paired test, then the
    correction across the comparison's metrics."""
    opts = spec.analysis
    out: list[dict[str, Any]] = []
    for c in spec.comparisons:
        rows = [_one(frame, c, m, opts.tails) for m in measured(spec) if m in c.metrics]
        for row, (padj, sig) in zip(
            rows, correct([r["p"] for r in rows], opts.correction, opts.alpha), strict=True
        ):
            row["p_adjusted"], row["significant"] = padj, sig
            row["correction"] = opts.correction
        out += rows
    return out


def _one(frame: pl.DataFrame, c: Comparison, metric: str, tails: int) -> dict[str, Any]:
    alt = alternative(c.better, metric, tails)
    a, b = pairs(frame, c.a, c.b, metric) if metric in frame.columns else (np.empty(0), np.empty(0))
    return {
        "a": c.a,
        "b": c.b,
        "better": c.better,
        "metric": metric,
        "alternative": alt,
        **paired_test(a, b, alt),
    }


def _power_alt(tails: int) -> str:
    return "larger" if tails == 1 else "two-sided"


#: Cohorts up to this size are found by stepping n; larger ones by statsmodels' solver
#: (which fails to converge for large effects, where n is 2 or 3).
SEARCH_UP_TO = 200


def _quiet_statsmodels() -> None:
    """Import statsmodels' warning classes before silencing warnings: that module, on its
    first import, puts an "always" filter for ConvergenceWarning in front of every filter,
    so imported inside ``catch_warnings`` it would print the solver's failure anyway (the
    failure is an answer here: no cohort)."""
    import statsmodels.tools.sm_exceptions  # noqa: F401


def paired_power(effect: float, n: int, alpha: float, tails: int) -> float:
    """The power of a paired t-test with ``n`` pairs against d_z = ``effect``: the
    noncentral t (ncp d_z sqrt(n), df n - 1) beyond the critical value, the formula of
    statsmodels' TTestPower, which gives NaN for large noncentralities."""
    df, ncp = n - 1, abs(effect) * math.sqrt(n)
    if tails == 1:
        return float(sst.nct.sf(sst.t.ppf(1 - alpha, df), df, ncp))
    crit = float(sst.t.ppf(1 - alpha / 2, df))
    return float(sst.nct.sf(crit, df, ncp) + sst.nct.cdf(-crit, df, ncp))


def n_required(effect: float, alpha: float, power: float, tails: int) -> int | None:
    """Participants (pairs) a paired t-test needs to detect d_z = ``effect`` with
    ``power`` at ``alpha``: the smallest n (at least 2) whose power reaches it. None when
    the effect is 0 or the solver fails."""
    from statsmodels.stats.power import TTestPower

    if not effect or not math.isfinite(effect):
        return None
    _quiet_statsmodels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(2, SEARCH_UP_TO + 1):
            # 1e-6: the seed's own effect size reaches 0.8 at 27 only to the 9th digit
            if paired_power(effect, n, alpha, tails) >= power - 1e-6:
                return n
        try:
            found = TTestPower().solve_power(
                effect_size=abs(effect),
                nobs=None,
                alpha=alpha,
                power=power,
                alternative=_power_alt(tails),
            )
        except (ValueError, RuntimeError):
            return None
    n_real = float(np.asarray(found).item())
    # the solver's answer is off in the 7th digit (27.0000001 for the seed's effect)
    return math.ceil(round(n_real, 4)) if math.isfinite(n_real) and n_real > 0 else None


def effect_for(n: int, alpha: float = 0.05, power: float = 0.8, tails: int = 1) -> float:
    """The d_z a paired t-test with ``n`` pairs detects with ``power`` at ``alpha`` (the
    seed's 27 at 0.8 and 0.05, one-tailed: about 0.49)."""
    from statsmodels.stats.power import TTestPower

    _quiet_statsmodels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = TTestPower().solve_power(
            effect_size=None, nobs=n, alpha=alpha, power=power, alternative=_power_alt(tails)
        )
    return float(np.asarray(d).item())


def _observed_effect(tests: Sequence[Mapping[str, Any]]) -> float | None:
    for pool in ([t for t in tests if t["metric"] == "sus"], list(tests)):
        dz = [abs(float(t["dz"])) for t in pool if t.get("dz") is not None and t["dz"] != 0]
        if dz:
            return min(dz)
    return None


def power_analysis(
    spec: StudySpec, tests: Sequence[Mapping[str, Any]], n_have: int
) -> dict[str, Any]:
    """``metrics["power"]``: the cohort a paired test needs at the spec's alpha, power and
    tails, from the stated or observed effect size; whether ``n_have`` is enough; and the
    effect size that gives the seed's 27 (one-tailed, 0.8, 0.05)."""
    opts = spec.analysis
    effect: float | None
    if opts.effect_size is not None:
        effect, source = float(opts.effect_size), "stated"
    else:
        observed = _observed_effect(tests)
        effect, source = (observed, "observed") if observed is not None else (None, "none")
    need = n_required(effect, opts.alpha, opts.power, opts.tails) if effect is not None else None
    seed_d = effect_for(SEED_N)
    marks = [(0.2, "small (Cohen)"), (0.5, "medium (Cohen)"), (0.8, "large (Cohen)")]
    marks.append((seed_d, f"gives the seed's {SEED_N} (one-tailed, power 0.8, alpha 0.05)"))
    if effect is not None:
        marks.append((abs(effect), f"this study's ({source})"))
    curve = [
        {
            "effect_size": d,
            "n_required": n_required(d, opts.alpha, opts.power, opts.tails),
            "label": label,
        }
        for d, label in sorted(marks)
    ]
    return {
        "alpha": opts.alpha,
        "power": opts.power,
        "tails": opts.tails,
        "effect_size": effect,
        "effect_from": source,
        "n_required": need,
        "n_have": n_have,
        "enough": (n_have >= need) if need is not None else None,
        "seed_effect_for_27": seed_d,
        # every d_z in [lo, hi) gives exactly the seed's 27
        "seed_effect_range": [effect_for(SEED_N), effect_for(SEED_N - 1)],
        "seed_n": SEED_N,
        "curve": curve,
    }
