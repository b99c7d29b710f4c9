"""The dashboard's agents page: the saved presets that name agents (``agents:``, a
``load.agents`` block), where their agents run, and the per-agent connectivity check
(:mod:`gridbench.jobflow.experiment.agent_check`) behind each one's *Test connectivity* button."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gridbench.errors import SpecError
from gridbench.jobflow.experiment.agent_check import STEP_NAMES, AgentCheck
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.jobflow.spec.model import ExperimentSpec
from gridbench.jobflow.web import presets as presets_mod
from gridbench.specload import dump_yaml

CHECK_JOB_TIMEOUT_S = 20.0  # the tiny job each agent submits


def where(agents: dict[str, Any]) -> str:
    """Where a block's agents run, in a few words."""
    if agents.get("processes"):
        return f"{agents['processes']} local processes"
    if agents.get("hosts"):
        return "hosts: " + ", ".join(str(h) for h in agents["hosts"])
    return f"the workers of the Dask scheduler {agents.get('scheduler')}"


def agent_presets(root: Path) -> list[dict[str, Any]]:
    """The saved presets with agents, for the page (name, description, backend, where)."""
    return [
        {
            "name": p.key.removeprefix("saved:"),
            "description": p.description,
            "backend": str(p.data.get("type")),
            "where": where(p.agents),
        }
        for p in presets_mod.saved_presets(root)
        if p.agents
    ]


def preset_spec(root: Path, name: str) -> ExperimentSpec:
    """The spec a check of saved preset ``name`` runs: its backend, an open load with its
    agents, the default job; a SpecError when there is no such preset with agents."""
    chosen = {p.key: p for p in presets_mod.saved_presets(root)}.get(f"saved:{name}")
    if chosen is None or not chosen.agents:
        raise SpecError(
            f"there is no saved preset {name!r} with agents",
            where="preset",
            fix="save a preset with an 'agents:' block on the presets page",
        )
    data = {
        "name": f"agents-check-{name}",
        "backend": chosen.data,
        "load": {"model": "open", "rate": 1, "agents": chosen.agents},
        "trial": {"duration": 1},
    }
    return load_spec_text(dump_yaml(data), f"preset {name}")[0]


def rows_view(rows: list[AgentCheck]) -> list[dict[str, Any]]:
    """The check's rows for the template: one cell per step (None: not run)."""
    out = []
    for r in rows:
        cells = []
        for n in STEP_NAMES:
            s = r.step(n)
            cells.append(None if s is None else {"ok": s.ok, "detail": s.detail, "fix": s.fix})
        out.append({"agent": r.agent, "host": r.host, "address": r.address, "ok": r.ok,
                    "cells": cells})  # fmt: skip
    return out
