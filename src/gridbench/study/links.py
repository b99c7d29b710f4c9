"""Personal participant links: an unguessable secret per participant, of which only the
SHA-256 is logged, so neither the log nor a copy of the run folder can be used to open a
session. Issuing a new link revokes the previous one."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from gridbench.study.records import LinkIssued, LinkRevoked, Record


def new_secret() -> str:
    """A fresh link secret (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def link_hash(secret: str) -> str:
    """The SHA-256 (hex) of a secret: what the log keeps."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def active_links(records: Iterable[Record]) -> dict[str, str]:
    """link hash -> participant for every link still valid: the latest link issued to each
    participant, unless it was revoked after."""
    current: dict[str, str] = {}  # participant -> hash
    for r in records:
        if isinstance(r, LinkIssued):
            current[r.participant] = r.link_hash
        elif isinstance(r, LinkRevoked):
            current.pop(r.participant, None)
    return {h: p for p, h in current.items()}
