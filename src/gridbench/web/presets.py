"""Presets offered by the new-experiment page: shipped ones and those saved in the store.

A saved preset is a backend section (``type`` and ``options``) with a description, kept
as ``<results root>/.presets/<name>.yaml``. Secrets are never stored: option keys that
name a password, token or secret with a literal value are refused, because presets must
reference an SSH agent, a key file or an environment variable instead.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from gridbench.backends import command_presets
from gridbench.backends.registry import create_backend
from gridbench.errors import SpecError
from gridbench.reference.presets import PRESETS as REFERENCE_PRESETS
from gridbench.spec.load import _plain, dump_yaml, load_spec_text, parse_yaml, set_path
from gridbench.store.layout import write_text_atomic

PRESET_DIR = ".presets"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SECRET_KEY = re.compile(r"pass(word|wd|phrase)?|secret|token|api[_-]?key|private[_-]?key", re.I)
_REFERENCE_OK = re.compile(r"(_env|_file|_path|_var)$", re.I)


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


def find_secrets(obj: Any, path: str = "") -> list[str]:
    """Dotted paths of literal secrets in ``obj`` (keys like password/token with a value)."""
    found: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}" if path else str(k)
            if (
                _SECRET_KEY.search(str(k))
                and not _REFERENCE_OK.search(str(k))
                and isinstance(v, str | int)
                and str(v).strip()
            ):
                found.append(p)
            found += find_secrets(v, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += find_secrets(v, f"{path}.{i}")
    return found


def refuse_secrets(obj: Any, where: str) -> None:
    """SpecError when ``obj`` holds a literal secret."""
    bad = find_secrets(obj)
    if bad:
        raise SpecError(
            f"refusing to store a literal secret at {', '.join(bad)}",
            where=where,
            fix="reference an SSH agent, a key file or an environment variable "
            "(e.g. password_env: MY_VAR) instead of the secret itself",
        )


REDACTED = "<redacted>"


def redact(data: Any) -> Any:
    """A copy of ``data`` with every literal secret replaced by a marker."""
    import copy

    out = copy.deepcopy(data)
    for path in find_secrets(out):
        set_path(out, path.split("."), REDACTED)
    return out


def redact_text(text: str) -> str:
    """YAML text as posted, or re-rendered without its secrets when it holds any (so a
    refused secret is never sent back to the browser)."""
    try:
        data = _plain(parse_yaml(text, "spec"))
    except SpecError:
        return text
    return dump_yaml(redact(data)) if find_secrets(data) else text


def example_specs() -> dict[str, str]:
    """Packaged example specs by name (YAML text)."""
    root = resources.files("gridbench") / "examples"
    return {
        p.name.removesuffix(".yaml"): p.read_text(encoding="utf-8")
        for p in root.iterdir()
        if p.name.endswith(".yaml")
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


def saved_presets(root: Path) -> list[Preset]:
    d = saved_dir(root)
    out = []
    if d.is_dir():
        for p in sorted(d.glob("*.yaml")):
            try:
                data = parse_preset(p.read_text(encoding="utf-8"), str(p))
            except (SpecError, OSError, UnicodeDecodeError):
                continue
            out.append(
                Preset(
                    f"saved:{p.stem}", f"saved: {p.stem}", "backend",
                    str(data.get("description", "")), None, True, data["backend"],
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
                f"the embedded reference grid, {name} status updates"
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
    """A saved preset document: ``description`` and ``backend: {type, options}``, checked."""
    data = _plain(parse_yaml(text, origin))
    if not isinstance(data, dict) or not isinstance(data.get("backend"), dict):
        raise SpecError(
            "a preset needs a 'backend:' mapping with 'type' and 'options'",
            where=origin,
            fix="write backend: {type: command, options: {...}}",
        )
    plain: dict[str, Any] = load_spec_text(
        dump_yaml(
            {
                "name": "preset-check",
                "backend": dict(data["backend"]),
                "load": {"rate": 1},
                "trial": {"duration": 1},
            }
        ),
        origin,
    )[1]
    backend = plain["backend"]
    refuse_secrets(backend, origin)
    create_backend(str(backend.get("type")), dict(backend.get("options") or {}))  # validates
    return {"description": str(data.get("description") or ""), "backend": backend}


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
        from gridbench.backends.command_options import merge

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


def try_pattern(backend: dict[str, Any], op: str, sample: str) -> list[tuple[str, str]]:
    """Apply the compiled ``op`` pattern of a command backend to sample output, as the
    backend would: (job id, state or message) pairs; SpecError when nothing matches."""
    from gridbench.backends.command_options import compile_options
    from gridbench.backends.command_parse import NoMatch, extract_id, parse_many, parse_one

    if backend.get("type") != "command":
        raise SpecError("only command-backend presets have patterns", where="backend.type")
    cfg = compile_options(dict(backend.get("options") or {}))
    opc = cfg.ops.get(op)
    if opc is None or opc.pattern is None:
        raise SpecError(f"the {op} operation has no pattern", where=f"backend.options.{op}")
    try:
        if op == "submit":
            return [(extract_id(opc.pattern, sample), "submitted")]
        if opc.mode in ("batch", "all"):
            found = parse_many(opc.pattern, sample, cfg.states, scope=opc.scope, ignore=opc.ignore)
            return [(jid, f"{st.state.value} ({st.message})") for jid, st in found.items()]
        st = parse_one(opc.pattern, sample, cfg.states)
        return [("(this job)", f"{st.state.value} ({st.message})")]
    except NoMatch:
        raise SpecError(
            f"the {op} pattern matches nothing in the sample",
            where=f"backend.options.{op}.pattern",
            fix="adjust the regex (named groups: id, state, exit_code, message)",
        ) from None
