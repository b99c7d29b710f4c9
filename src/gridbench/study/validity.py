"""The study's validity rules: when a figure of a usability study is not to be trusted as
it stands. Pure functions over the analysed parts; :func:`validity` is stored as
``metrics["validity"]`` (``valid`` is true when no rule flagged anything) and the report
shows the flags in its headline and a table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridbench.family import ValidityRule
from gridbench.schema import validity_document

SMALL_COHORT = "small_cohort"
FEW_PAIRS = "few_pairs"
MISSING_SUS = "missing_sus"
UNFINISHED = "unfinished"
OUT_OF_SCALE = "out_of_scale"

STUDY_VALIDITY_RULES: tuple[ValidityRule, ...] = (
    ValidityRule(
        SMALL_COHORT,
        "the cohort (the fewest complete pairs of any declared comparison) is below the "
        "power analysis' minimum: a real difference of the assumed size may go undetected.",
    ),
    ValidityRule(
        FEW_PAIRS,
        "a comparison and metric with fewer than 2 complete pairs, or whose differences are "
        "all equal, has no t-test: it is listed without a p-value.",
    ),
    ValidityRule(
        MISSING_SUS,
        "a participant who did a tool's tasks but gave no SUS for it is flagged: the tool's "
        "SUS rests on fewer people than its tasks.",
    ),
    ValidityRule(
        UNFINISHED,
        "a participant whose session started but did not finish is flagged: their answers "
        "so far are kept and used, but the later tools in their order are missing.",
    ),
    ValidityRule(
        OUT_OF_SCALE,
        "an install survey rating above the declared scale is left out and flagged.",
    ),
)


def _flag(rule: str, at: str, detail: str) -> dict[str, Any]:
    return {"rule": rule, "at": at, "detail": detail}


def validity(
    *,
    power: Mapping[str, Any],
    comparisons: Sequence[Mapping[str, Any]],
    missing_sus: Mapping[str, Sequence[str]],
    unfinished: Sequence[str],
    out_of_scale: int,
) -> dict[str, Any]:
    """``metrics["validity"]``: ``valid``, every rule's ``flags`` and the ``rules``
    applied. ``missing_sus`` maps a tool to the participants without its SUS."""
    flags: list[dict[str, Any]] = []
    if power.get("enough") is False:
        flags.append(
            _flag(
                SMALL_COHORT,
                "cohort",
                f"{power.get('n_have')} complete participants, the power analysis needs "
                f"{power.get('n_required')} (d_z {float(power.get('effect_size') or 0):.2f} "
                f"{power.get('effect_from')}, power {power.get('power')}, "
                f"alpha {power.get('alpha')})",
            )
        )
    for c in comparisons:
        if c.get("p") is None:
            n = int(c.get("n") or 0)
            why = f"{n} complete pair(s)" if n < 2 else f"all {n} differences are equal"
            flags.append(
                _flag(FEW_PAIRS, f"{c['a']} vs {c['b']}: {c['metric']}", f"no t-test: {why}")
            )
    for tool, people in missing_sus.items():
        if people:
            flags.append(
                _flag(
                    MISSING_SUS,
                    tool,
                    f"no SUS from {len(people)} participant(s) who did its tasks: "
                    + ", ".join(people),
                )
            )
    if unfinished:
        flags.append(
            _flag(
                UNFINISHED,
                "participants",
                f"{len(unfinished)} did not finish: {', '.join(unfinished)}",
            )
        )
    if out_of_scale:
        flags.append(
            _flag(
                OUT_OF_SCALE, "install survey", f"{out_of_scale} rating(s) above the scale left out"
            )
        )
    return validity_document(flags, STUDY_VALIDITY_RULES)
