"""Presets offered by the new-experiment page: shipped ones and those saved in the store.

A saved preset is a backend section (``type`` and ``options``) with a description, and
optionally the agents that load it (``agents:``, as ``load.agents`` takes a block), kept
as ``<results root>/.presets/<name>.yaml``. Secrets are never stored: a preset holding a
literal one is refused (jobflow/web/literal_secrets.py).
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench.errors import GridbenchError, SpecError
from gridbench.jobflow.backends.command import presets as command_presets
from gridbench.jobflow.backends.command.options import merge
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.reference.presets import PRESET_NOTES as REFERENCE_NOTES
from gridbench.jobflow.reference.presets import PRESETS as REFERENCE_PRESETS
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.jobflow.web.literal_secrets import refuse_secrets
from gridbench.presets import shipped_yaml
from gridbench.specload import dump_yaml, parse_yaml, plain_data
from gridbench.store.layout import write_text_atomic
from gridbench.store.safe_open import CAPS, read_store_text

PRESET_DIR = ".presets"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Preset:
    """One entry of the preset picker."""

    key: str  # unique: 'example:demo', 'reference:batched', 'command:arc', 'saved:NAME'
    label: str
    kind: str  # example | backend
    description: str
    tested: bool | None
    editable: bool
    data: dict[str, Any]  # a whole spec (example) or a backend section
    agents: dict[str, Any] | None = None  # a saved preset's load.agents block, if any


def example_specs() -> dict[str, str]:
    """Packaged example specs by name (YAML text)."""
    return {
        name: p.read_text(encoding="utf-8")
        for name, p in shipped_yaml("jobflow", "examples").items()
    }


def _strip_meta(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in command_presets.META_KEYS}


def saved_dir(root: Path) -> Path:
    return root / PRESET_DIR


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise SpecError(
            f"invalid preset name {name!r}",
            where="preset name",
            fix="use letters, digits, '.', '_' or '-' (at most 64 characters)",
        )
    return name


def read_saved_preset(root: Path, name: str) -> str | None:
    """The text of the saved preset ``name`` (None when there is none), read as the store's
    foreign input: never through a link, bounded, strict UTF-8 (else a ResultsError)."""
    d = saved_dir(root)
    if not NAME_RE.match(name) or d.is_symlink():
        return None
    try:
        return read_store_text(d / f"{name}.yaml", cap=CAPS["preset"], base=d)
    except FileNotFoundError:
        return None


def saved_presets(root: Path) -> list[Preset]:
    """The presets saved in the store; a linked, oversized or malformed one is left out."""
    d = saved_dir(root)
    out = []
    if d.is_dir():
        for p in sorted(d.glob("*.yaml")):
            try:
                text = read_saved_preset(root, p.stem)
                if text is None:
                    continue
                data = parse_preset(text, str(p))
            except (GridbenchError, OSError):
                continue
            out.append(
                Preset(
                    f"saved:{p.stem}", f"saved: {p.stem}", "backend",
                    str(data.get("description", "")), None, True, data["backend"],
                    data.get("agents"),
                )
            )  # fmt: skip
    return out


def all_presets(root: Path) -> list[Preset]:
    """Examples, reference-grid configurations, command presets and saved presets."""
    return [*_shipped(), *saved_presets(root)]


@functools.cache
def _shipped() -> tuple[Preset, ...]:
    """The presets installed with gridbench (read once: they do not change)."""
    out = [
        Preset(
            f"example:{name}", f"example spec: {name}", "example", "a whole experiment spec",
            True, False, {"yaml": text},
        )
        for name, text in sorted(example_specs().items())
    ]  # fmt: skip
    for name, grid in REFERENCE_PRESETS.items():
        out.append(
            Preset(
                f"reference:{name}", f"reference grid: {name}", "backend",
                f"the embedded reference grid, {REFERENCE_NOTES[name]}"
                + (f" ({grid})" if grid else ""),
                True, False, {"type": "reference", "options": {"preset": name}},
            )
        )  # fmt: skip
    for info in command_presets.listing():
        out.append(
            Preset(
                f"command:{info.name}", f"command: {info.name}", "backend",
                f"{info.description} (written for {info.written_for})",
                info.tested, False, {"type": "command", "options": {"preset": info.name}},
            )
        )  # fmt: skip
    return tuple(out)


def command_preset_options(name: str) -> dict[str, Any]:
    """A shipped command preset's options (templates, patterns, states), to copy and edit."""
    return _strip_meta(command_presets.load(name))


def parse_preset(text: str, origin: str) -> dict[str, Any]:
    """A saved preset document: ``description``, ``backend: {type, options}`` and optionally
    ``agents:`` (a ``load.agents`` block), checked."""
    data = plain_data(parse_yaml(text, origin))
    refuse_secrets(data, origin)  # the whole document, before anything could echo it
    if not isinstance(data, dict) or not isinstance(data.get("backend"), dict):
        raise SpecError(
            "a preset needs a 'backend:' mapping with 'type' and 'options'",
            where=origin,
            fix="write backend: {type: command, options: {...}}",
        )
    agents = data.get("agents")
    if agents is not None and not isinstance(agents, dict):
        raise SpecError(
            "a preset's 'agents:' is a load.agents block",
            where=f"{origin}: agents",
            fix="write agents: {processes: 2}, {hosts: [...], venv: ...} or {scheduler: ...}",
        )
    load: dict[str, Any] = {"rate": 1} if agents is None else {"rate": 1, "agents": agents}
    plain: dict[str, Any] = load_spec_text(
        dump_yaml(
            {
                "name": "preset-check",
                "backend": dict(data["backend"]),
                "load": load,
                "trial": {"duration": 1},
            }
        ),
        origin,
    )[1]
    backend = plain["backend"]
    refuse_secrets(backend, origin)
    create_backend(str(backend.get("type")), dict(backend.get("options") or {}))  # validates
    out = {"description": str(data.get("description") or ""), "backend": backend}
    if agents is not None:
        out["agents"] = plain["load"]["agents"]
    return out


def save_preset(root: Path, name: str, text: str) -> Path:
    """Validate and store a preset; returns its path."""
    check_name(name)
    data = parse_preset(text, f"preset {name}")
    path = saved_dir(root) / f"{name}.yaml"
    write_text_atomic(path, dump_yaml(data))
    return path


def delete_preset(root: Path, name: str) -> bool:
    path = saved_dir(root) / f"{check_name(name)}.yaml"
    if path.is_file():
        path.unlink()
        return True
    return False


OPS = ("init", "submit", "status", "finished", "cancel", "output", "queue")


def template_rows(backend: dict[str, Any]) -> list[dict[str, str]]:
    """The command templates and patterns of a command-backend section, for display."""
    opts = dict(backend.get("options") or {})
    if backend.get("type") != "command":
        return []
    if "preset" in opts:  # the shipped preset underneath, then the overrides
        opts = merge(command_preset_options(str(opts["preset"])), opts)
    rows = []
    for op in OPS:
        v = opts.get(op)
        if v is None:
            continue
        spec = v if isinstance(v, dict) else {"argv": v}
        argv = spec.get("argv")
        rows.append(
            {
                "op": op,
                "argv": " ".join(map(str, argv)) if isinstance(argv, list) else str(argv or ""),
                "pattern": str(spec.get("pattern") or ""),
            }
        )
    return rows


#: Limits of "try the pattern": the sample, each pattern, and the child's wall time.
MAX_SAMPLE_BYTES = 64 * 1024
MAX_PATTERN_CHARS = 2000
TRY_TIMEOUT_S = 5.0


def _patterns(obj: Any) -> list[str]:
    """Every ``pattern``-like string of a backend section (all are regexes)."""
    if isinstance(obj, dict):
        out = [v for k, v in obj.items() if isinstance(v, str) and k in _PATTERN_KEYS]
        return out + [p for v in obj.values() for p in _patterns(v)]
    if isinstance(obj, list):
        return [p for v in obj for p in _patterns(v)]
    return []


_PATTERN_KEYS = frozenset({"pattern", "ignore", "unknown_pattern", "id_key"})


def try_pattern(backend: dict[str, Any], op: str, sample: str) -> list[tuple[str, str]]:
    """Apply the compiled ``op`` pattern of a command backend to sample output, as the
    backend would: (job id, state or message) pairs; SpecError when nothing matches.

    The match runs in a child process with a timeout (see :mod:`pattern_worker`), so a
    regex that backtracks catastrophically costs that child, not the server."""
    if backend.get("type") != "command":
        raise SpecError("only command-backend presets have patterns", where="backend.type")
    if op not in OPS:
        raise SpecError(f"unknown operation {op!r}", where="op", fix=f"one of {', '.join(OPS)}")
    if len(sample.encode("utf-8")) > MAX_SAMPLE_BYTES:
        raise SpecError(
            f"the sample is larger than {MAX_SAMPLE_BYTES // 1024} KiB",
            where="sample",
            fix="paste a few lines of the command's output",
        )
    if any(len(p) > MAX_PATTERN_CHARS for p in _patterns(backend.get("options"))):
        raise SpecError(
            f"a pattern is longer than {MAX_PATTERN_CHARS} characters",
            where="backend.options",
            fix="a pattern picks a few fields: shorten it",
        )
    request = json.dumps({"backend": backend, "op": op, "sample": sample})
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gridbench.jobflow.web.pattern_worker"],
            input=request, capture_output=True, text=True, timeout=TRY_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:  # run() kills the child
        raise SpecError(
            f"the {op} pattern took longer than {TRY_TIMEOUT_S:g} s on the sample",
            where=f"backend.options.{op}.pattern",
            fix="the regex backtracks catastrophically: avoid nested repeats such as (a+)+ "
            "and anchor it",
        ) from None
    try:
        answer = json.loads(proc.stdout)
    except ValueError:
        raise SpecError(
            f"trying the pattern failed (exit status {proc.returncode})",
            where=f"backend.options.{op}.pattern",
            fix="check the preset; the server log has no more detail",
        ) from None
    if "error" in answer:
        e = answer["error"]
        raise SpecError(str(e["message"]), where=e.get("where"), fix=e.get("fix"))
    return [(str(a), str(b)) for a, b in answer["rows"]]
