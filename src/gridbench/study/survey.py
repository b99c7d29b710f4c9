"""The install/configuration survey (XtreemOS): items rated 1..scale per release, the
trend across releases, and the complaints grouped.

Pure. Per release: the mean of each item, and the overall mean of every rating given for
that release (respondents who skipped an item weigh only in the items they rated). The
trend is the overall mean of the first and last release (the seed: 2.78 -> 4.3) and the
least-squares slope per release step. Releases come in the spec's order
(``install_survey.releases``), then in the order first seen in the log.

Complaints are grouped by release, then by a keyword topic, the first that matches (in
this order): documentation (doc, manual, guide, tutorial), stability (crash, hang, fail,
error, bug), installation (install, package, rpm, dependenc, download), configuration
(config, setting, node, network), usage (use, command, run, interface); else "other". A
simple grouping for a reader to scan, not a classifier: the text is kept as given.

A rating above the declared scale is left out and counted (a validity flag).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from gridbench.stats import ols_slope
from gridbench.study.model import InstallSurvey

TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # documentation first: "docs miss the client node" is about the docs, not the node
    ("documentation", ("doc", "manual", "guide", "tutorial")),
    ("stability", ("crash", "hang", "fail", "error", "bug")),
    ("installation", ("install", "package", "rpm", "dependenc", "download")),
    ("configuration", ("config", "setting", "node", "network")),
    ("usage", ("use", "command", "run", "interface")),
)


def topic(text: str) -> str:
    """The keyword topic of a complaint (module docstring), "other" when none matches."""
    low = text.lower()
    return next((name for name, words in TOPICS if any(w in low for w in words)), "other")


def _releases(declared: Sequence[str], seen: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*declared, *seen]))


def _mean(x: pl.Series) -> float | None:
    return float(x.mean()) if len(x) else None  # type: ignore[arg-type]


def categories(
    rated: pl.DataFrame, survey: InstallSurvey, order: list[str]
) -> list[dict[str, Any]]:
    """Per declared category: the mean of all its items' ratings per release (000 Fig.
    3.3) and per release group (Fig. 3.2: "averaged across all test items"), with the
    number of ratings behind each; a group or release without ratings has mean None."""
    out = []
    for cat, members in survey.categories.items():
        sub = rated.filter(pl.col("item").is_in(members))
        per_release = {
            r: {"mean": _mean(v), "n": len(v)}
            for r in order
            for v in [sub.filter(pl.col("release") == r)["value"]]
        }
        per_group = {
            g: {"mean": _mean(v), "n": len(v), "releases": rels}
            for g, rels in survey.release_groups.items()
            for v in [sub.filter(pl.col("release").is_in(rels))["value"]]
        }
        out.append(
            {"category": cat, "items": members, "releases": per_release, "groups": per_group}
        )
    return out


def summarize(
    install: pl.DataFrame, complaints: pl.DataFrame, survey: InstallSurvey
) -> dict[str, Any] | None:
    """``metrics["install_survey"]``: per release its item means and overall mean, the
    trend, the grouped complaints; None when there is neither a survey nor any answer."""
    if install.is_empty() and complaints.is_empty():
        return None
    over = install.filter(pl.col("value") > survey.scale)
    rated = install.filter(pl.col("value") <= survey.scale)
    seen = [*rated["release"].to_list(), *complaints["release"].to_list()]
    order = _releases(survey.releases, seen)
    items = list(dict.fromkeys([*survey.items, *rated["item"].to_list()]))
    releases: list[dict[str, Any]] = []
    for r in order:
        sub = rated.filter(pl.col("release") == r)
        per_item = {}
        for it in items:
            vals = sub.filter(pl.col("item") == it)["value"]
            per_item[it] = {"mean": _mean(vals), "n": len(vals)}
        releases.append(
            {
                "release": r,
                "respondents": sub["respondent"].n_unique(),
                "items": per_item,
                "overall": _mean(sub["value"]),
                "n": len(sub),
            }
        )
    withdata = [
        (i, float(x["overall"])) for i, x in enumerate(releases) if isinstance(x["overall"], float)
    ]
    slope = (
        ols_slope(
            np.array([i for i, _ in withdata], dtype=np.float64), np.array([v for _, v in withdata])
        )
        if len(withdata) >= 2
        else None
    )
    trend = {
        "first": releases[withdata[0][0]]["release"] if withdata else None,
        "last": releases[withdata[-1][0]]["release"] if withdata else None,
        "from_mean": withdata[0][1] if withdata else None,
        "to_mean": withdata[-1][1] if withdata else None,
        "change": (withdata[-1][1] - withdata[0][1]) if len(withdata) >= 2 else None,
        "slope_per_release": slope,
    }
    groups: dict[tuple[str, str], list[str]] = {}
    for rel, text in complaints.iter_rows():
        groups.setdefault((rel, topic(text)), []).append(text)
    grouped = [
        {"release": rel, "topic": top, "count": len(texts), "texts": texts}
        for rel in order
        for (r2, top), texts in groups.items()
        if r2 == rel
    ]
    return {
        "scale": survey.scale,
        "items": items,
        "releases": releases,
        "categories": categories(rated, survey, order),
        "trend": trend,
        "complaints": grouped,
        "complaints_total": len(complaints),
        "out_of_scale": len(over),
    }
