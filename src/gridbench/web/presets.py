"""Presets offered by the new-experiment page: shipped ones and those saved in the store.

A saved preset is a backend section (``type`` and ``options``) with a description, and
optionally the agents that load it (``agents:``, as ``load.agents`` takes a block), kept
as ``<results root>/.presets/<name>.yaml``. Secrets are never stored: option keys that
name a password, token, key or credential with a literal value are refused, and so are
values that are secrets whatever their key (private-key blocks, URLs with a password,
``Authorization: Bearer ...``, tokens of a known shape such as JWTs, ``-u user:pass``,
``--password=...``, ``NAME_TOKEN=...``, ``sshpass -p ...`` or mysql's ``-pPASSWORD`` in
argv lists and command strings), because presets and specs must
reference an SSH agent, a key file or an environment variable instead.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gridbench.errors import GridbenchError, SpecError
from gridbench.jobflow.backends.command import presets as command_presets
from gridbench.jobflow.backends.command.options import merge
from gridbench.jobflow.backends.registry import create_backend
from gridbench.jobflow.reference.presets import PRESETS as REFERENCE_PRESETS
from gridbench.jobflow.spec.load import load_spec_text
from gridbench.presets import shipped_yaml
from gridbench.specload import dump_yaml, parse_yaml, plain_data, set_path
from gridbench.store.layout import write_text_atomic
from gridbench.store.safe_open import CAPS, read_store_text

PRESET_DIR = ".presets"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SECRET_KEY = re.compile(
    r"pass(word|wd|phrase)?|secret|token|api[_-]?key|private[_-]?key|credential|cookie", re.I
)
#: Words of a key that name a secret ("ssh_key", "auth", "X-Auth-Token", "apiKey").
_SECRET_WORDS = frozenset(
    {"key", "credential", "credentials", "auth", "authorization", "cookie", "passwd", "pass"}
)
#: Keys that look like secrets but are not: id_key is a regex of the command backend.
_NOT_SECRET_KEYS = frozenset({"id_key"})
_REFERENCE_OK = re.compile(r"(_env|_file|_path|_var)$", re.I)
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_USER_PASS_FLAGS = frozenset({"-u", "--user", "--proxy-user", "-U"})
#: A credential in an HTTP header: ``Authorization: Bearer X``, or a value that is one.
_AUTH_HEADER = re.compile(r"(?:^|authorization\s*:\s*)(?:bearer|basic|token)\s+([^\s'\"]+)", re.I)
#: Tokens recognisable by their shape, whatever key holds them (JWT, GitHub, GitLab,
#: Slack, AWS access key ids).
_TOKEN_SHAPE = re.compile(
    r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]+|\bgh[pousr]_[A-Za-z0-9]{20,}|\bglpat-[\w-]{20,}"
    r"|\bxox[abprs]-[\w-]{10,}|\bAKIA[0-9A-Z]{16}\b"
)
#: Programs whose ``-p`` takes a password: sshpass as ``-p PW`` or ``-pPW``; mysql and
#: mariadb clients only as ``-pPW`` (their ``-p X`` prompts, and X is the database).
_SSHPASS = frozenset({"sshpass"})
_MYSQL_PREFIXES = ("mysql", "mariadb")
_ASSIGN = re.compile(r"^-{0,2}([A-Za-z_][\w.-]*)=(.*)$", re.S)


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


def _secret_key(key: str) -> bool:
    """A key naming a secret (password, token, api_key, ...), not a reference to one."""
    k = key.strip()
    if _REFERENCE_OK.search(k) or k.lower() in _NOT_SECRET_KEYS:
        return False
    words = {w.lower() for w in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", k) if w}
    return bool(words & _SECRET_WORDS) or bool(_SECRET_KEY.search(k))


def _key_path(key: str, value: str) -> bool:
    """``ssh_key: ~/.ssh/id_ed25519``: a key word naming where a key file is, not a secret."""
    words = {w.lower() for w in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", key) if w}
    only_key = words & _SECRET_WORDS == {"key"} and not _SECRET_KEY.search(key)
    return only_key and value.startswith(("/", "~/", "./")) and "\n" not in value


def _is_reference(value: str) -> bool:
    """A template placeholder or an environment reference, not a literal secret."""
    return value.startswith(("{", "$", "<")) or not value.strip()


def _secret_value(value: str) -> bool:
    """A private key block, a URL with a password in it, an Authorization header or a
    token of a known shape, or a command line that holds a credential."""
    if _PEM.search(value) or _TOKEN_SHAPE.search(value):
        return True
    header = _AUTH_HEADER.search(value)
    if header and not _is_reference(header.group(1)):
        return True
    if _argv_secrets(_words(value)):
        return True
    for word in value.split():
        if "://" in word and "@" in word:
            try:
                password = urlsplit(word).password
            except ValueError:
                continue
            if password and not _is_reference(password):
                return True
    return False


def _words(value: str) -> list[str]:
    """The words of a command string, as a shell would split them (roughly, when the
    quotes do not balance)."""
    if " " not in value:
        return []
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def _program(item: str) -> str:
    return item.rsplit("/", 1)[-1].lower()


def _password_flag(items: list[Any], i: int) -> int | None:
    """The index of the password given by ``-p`` at ``items[i]`` (sshpass, mysql), if any."""
    item = items[i]
    if not isinstance(item, str) or not item.startswith("-p") or item.startswith("--"):
        return None
    before = {_program(x) for x in items[:i] if isinstance(x, str)}
    if item != "-p":  # -pPASSWORD
        mysql = any(p.startswith(_MYSQL_PREFIXES) for p in before)
        return i if (mysql or before & _SSHPASS) and not _is_reference(item[2:]) else None
    nxt = items[i + 1] if i + 1 < len(items) else None
    if before & _SSHPASS and isinstance(nxt, str) and not _is_reference(nxt):
        return i + 1
    return None


def _argv_secrets(items: list[Any]) -> list[int]:
    """Indexes of argv items that hold a secret: ``-u user:pass``, ``--password=x``,
    ``--password x`` (and the like for token/secret), ``NAME_TOKEN=x`` (as ``env``
    takes it), ``sshpass -p x`` and mysql's ``-px``."""
    found = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            continue
        assign = _ASSIGN.match(item)
        if assign and _secret_key(assign.group(1)):
            if not _is_reference(assign.group(2)):
                found.append(i)
            continue
        password = _password_flag(items, i)
        if password is not None:
            found.append(password)
            continue
        nxt = items[i + 1] if i + 1 < len(items) else None
        if not isinstance(nxt, str) or _is_reference(nxt):
            continue
        user_pass = item in _USER_PASS_FLAGS and ":" in nxt
        if (user_pass and not _is_reference(nxt.split(":", 1)[1])) or (
            item.startswith("--") and _secret_key(item[2:])
        ):
            found.append(i + 1)
    return found


def find_secrets(obj: Any, path: str = "") -> list[str]:
    """Dotted paths of literal secrets in ``obj``: values of keys like password/token,
    private keys, URLs with a password, and credentials in argv lists."""
    found: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}" if path else str(k)
            literal = isinstance(v, str | int) and str(v).strip()
            if literal and _secret_key(str(k)) and not _key_path(str(k), str(v)):
                found.append(p)
            else:
                found += find_secrets(v, p)
    elif isinstance(obj, list):
        hidden = set(_argv_secrets(obj))
        for i, v in enumerate(obj):
            found += [f"{path}.{i}"] if i in hidden else find_secrets(v, f"{path}.{i}")
    elif isinstance(obj, str) and _secret_value(obj):
        found.append(path)
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
    out = copy.deepcopy(data)
    for path in find_secrets(out):
        set_path(out, path.split("."), REDACTED)
    return out


def redact_text(text: str) -> str:
    """YAML text as posted, or re-rendered without its secrets when it holds any (so a
    refused secret is never sent back to the browser)."""
    try:
        data = plain_data(parse_yaml(text, "spec"))
    except SpecError:
        return text
    return dump_yaml(redact(data)) if find_secrets(data) else text


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
            [sys.executable, "-m", "gridbench.web.pattern_worker"],
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
