"""Literal secrets in a spec or preset: found anywhere (by key and by value), refused with
the place named and never the value, and redacted from what is shown back.

Option keys that name a password, token, key or credential with a literal value are
refused, and so are values that are secrets whatever their key (private-key blocks, URLs
with a password, ``Authorization: Bearer ...``, tokens of a known shape such as JWTs,
``-u user:pass``, ``--password=...``, ``NAME_TOKEN=...``, ``sshpass -p ...`` or mysql's
``-pPASSWORD`` in argv lists and command strings): specs and presets reference an SSH
agent, a key file or an environment variable instead.
"""

from __future__ import annotations

import copy
import re
import shlex
from typing import Any
from urllib.parse import urlsplit

from gridbench.errors import SpecError
from gridbench.specload import dump_yaml, parse_yaml, plain_data, set_path

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
