"""docs/architecture.md's layer diagrams are the import-linter contracts CI enforces: the
top-level layers and job flow's own, layer by layer (a doc that drifts fails here)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]


def contract_layers(container: str) -> list[set[str]]:
    (c,) = [c for c in CONTRACTS if c.get("type") == "layers" and c["containers"] == [container]]
    return [{n.strip() for n in re.split(r"[:|]", layer)} for layer in c["layers"]]


def diagram_after(heading: str) -> list[set[str]]:
    """The first fenced block after ``heading``: one layer per line, top first (a label
    before two spaces is dropped; names split by '·' or '|'; '│' lines skipped)."""
    block = DOC.split(heading, 1)[1].split("```", 2)[1]
    layers = []
    for line in block.strip("\n").splitlines():
        text = line.strip()
        if not text or text == "│":
            continue
        label_and_names = re.split(r"\s{2,}", text, maxsplit=1)
        names = label_and_names[-1]
        layers.append({n.strip() for n in re.split(r"[·|]", names) if n.strip()})
    return layers


def test_the_top_level_diagram_is_the_contract() -> None:
    assert diagram_after("## Layers") == contract_layers("gridbench")


def test_job_flow_s_diagram_is_its_contract() -> None:
    assert diagram_after("### Job flow's own layers") == contract_layers("gridbench.jobflow")


def test_every_top_level_package_is_in_the_house_table() -> None:
    table = DOC.split("## The house, top level", 1)[1].split("## Layers", 1)[0]
    src = ROOT / "src" / "gridbench"
    names = {p.stem for p in src.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in src.iterdir() if (p / "__init__.py").exists()}
    shown = ("`{}`", "`{}/`", "`{}.py`")
    missing = sorted(n for n in names if not any(s.format(n) in table for s in shown))
    assert not missing, missing


def test_a_diagram_that_drifts_is_caught() -> None:
    drifted = [set(x) for x in contract_layers("gridbench")]
    drifted[0].add("nowhere")
    assert diagram_after("## Layers") != drifted


def test_model_is_forbidden_every_job_flow_module_but_its_public_face() -> None:
    """The ``forbidden`` contract on ``gridbench.model`` names every module of job flow's
    (exhaustive) layers except ``api``, so a new job-flow subpackage is forbidden too."""
    (c,) = [c for c in CONTRACTS if c.get("source_modules") == ["gridbench.model"]]
    assert c["type"] == "forbidden"
    layers = contract_layers("gridbench.jobflow")
    every = {f"gridbench.jobflow.{n}" for layer in layers for n in layer}
    assert set(c["forbidden_modules"]) == every - {"gridbench.jobflow.api"}
    assert "gridbench.jobflow.api" in every
