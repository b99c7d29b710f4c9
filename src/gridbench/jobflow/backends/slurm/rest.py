"""slurmrestd as a second path into Slurm: submit and list jobs over REST with JWT.

The token is read from an environment variable or a file when the backend opens, never
from the spec, and never reaches a log, an event or a report. Its ``exp`` claim is read
(not verified: slurmctld does that) so that an expired token is named as such instead of
slurmrestd's generic "Authentication failure" or "Unspecified error".
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from gridbench.errors import BackendError
from gridbench.jobflow.backends.base import SubmitError
from gridbench.jobflow.backends.slurm.parse import describe_errors
from gridbench.jobflow.events.model import (
    FAIL_SUBMIT_AUTH,
    FAIL_SUBMIT_ERROR,
    FAIL_SUBMIT_REJECTED,
    FAIL_SUBMIT_TIMEOUT,
)

_JWT = re.compile(r"^[\w-]+\.[\w-]+\.[\w-]*$", re.ASCII)
FIX_TOKEN = (
    "get a fresh token ('scontrol token username=USER lifespan=SECONDS') and export it in "
    "the variable backend.options.rest.token_env names (or write it to token_file)"
)


class SlurmRestOptions(BaseModel):
    """``backend.options.rest`` of the slurm backend (docs/backends.md)."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(description="slurmrestd base URL, e.g. http://127.0.0.1:6820")
    user: str | None = Field(
        default=None, description="X-SLURM-USER-NAME; default: the user gridbench runs as"
    )
    token_env: str = Field(default="SLURM_JWT", description="variable holding the JWT")
    token_file: str | None = Field(default=None, description="or a file holding it")
    api_version: str = Field(default="v0.0.38", pattern=r"^v\d+\.\d+\.\d+$")
    timeout_s: float = Field(default=30.0, gt=0)
    max_connections: int = Field(default=32, ge=1, le=1024)


@dataclass(frozen=True, slots=True)
class Credential:
    """A user name and its JWT (kept out of repr so it cannot be logged by accident)."""

    user: str
    token: str
    expires: float | None  # Unix seconds from the token's exp claim

    def __repr__(self) -> str:
        return f"Credential(user={self.user!r}, expires={self.expires!r})"

    def expired(self, now: float | None = None) -> bool:
        return self.expires is not None and (now or time.time()) >= self.expires

    def expiry_text(self) -> str:
        if self.expires is None:
            return "no expiry"
        return datetime.fromtimestamp(self.expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def token_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (unverified), or None when it has none or is unreadable."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) else None


def load_credential(
    o: SlurmRestOptions,
    env: Mapping[str, str],
    user: str | None = None,
    token_env: str | None = None,
    token_file: str | None = None,
) -> Credential:
    """Read a token from a file or the environment; a missing or expired one is an error
    that names where it was looked for (never the token)."""
    file = token_file or (None if token_env else o.token_file)
    var = token_env or o.token_env
    if file:
        try:
            token = Path(file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise BackendError(
                f"cannot read the Slurm token file: {exc.strerror or exc}",
                where=file,
                fix=FIX_TOKEN,
            ) from None
        where = file
    else:
        token = env.get(var, "").strip()
        where = f"environment variable {var}"
        if not token:
            raise BackendError("no Slurm JWT is set", where=where, fix=FIX_TOKEN)
    token = token.removeprefix("SLURM_JWT=")
    if not _JWT.match(token):  # checked here so the value can never reach a message
        raise BackendError(
            "the Slurm JWT is not a token (three base64url parts joined by dots)",
            where=where,
            fix=FIX_TOKEN,
        )
    name = user or o.user or _login()
    cred = Credential(name, token, token_expiry(token))
    if cred.expired():
        raise BackendError(
            f"the Slurm JWT for {name} expired at {cred.expiry_text()}", where=where, fix=FIX_TOKEN
        )
    return cred


def _login() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


class SlurmRest:
    """A small slurmrestd client: one pooled HTTP connection set per backend."""

    def __init__(self, options: SlurmRestOptions) -> None:
        self.options = options
        self._base = options.url.rstrip("/")
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            n = self.options.max_connections
            self._client = httpx.AsyncClient(
                timeout=self.options.timeout_s,
                limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _url(self, path: str) -> str:
        return f"{self._base}/slurm/{self.options.api_version}/{path}"

    @staticmethod
    def _headers(cred: Credential) -> dict[str, str]:
        return {"X-SLURM-USER-NAME": cred.user, "X-SLURM-USER-TOKEN": cred.token}

    async def ping(self, cred: Credential) -> None:
        """``GET /ping``: reachable, and the credential accepted (else BackendError)."""
        try:
            r = await self._http().get(self._url("ping"), headers=self._headers(cred))
        except httpx.HTTPError as exc:
            raise BackendError(
                f"slurmrestd does not answer: {_what(exc)}",
                where=self.options.url,
                fix="start slurmrestd (with -a rest_auth/jwt) or fix backend.options.rest.url",
            ) from None
        if r.status_code in (401, 403) or cred.expired():
            raise BackendError(
                f"slurmrestd refused the token of {cred.user} (HTTP {r.status_code}"
                f"{', expired at ' + cred.expiry_text() if cred.expired() else ''})",
                where=self.options.url,
                fix=FIX_TOKEN,
            )
        try:
            _doc(r, "ping")
        except BackendError as exc:
            # slurmrestd only forwards the token: slurmctld checks its signature and user,
            # and answers a bad one with a bare "Unspecified error"
            raise BackendError(
                f"slurmctld refused the request of {cred.user} through slurmrestd "
                f"({exc.message}); a token signed with another key, or for a user slurmctld "
                "does not know, gives this",
                where=self.options.url,
                fix=FIX_TOKEN,
            ) from None

    async def submit(self, cred: Credential, job: dict[str, Any], script: str) -> str:
        """``POST job/submit``; a refusal is a SubmitError of the matching kind."""
        try:
            r = await self._http().post(
                self._url("job/submit"),
                headers=self._headers(cred),
                json={"job": job, "script": script},
            )
        except httpx.TimeoutException:
            raise SubmitError(
                FAIL_SUBMIT_TIMEOUT, f"slurmrestd gave no answer within {self.options.timeout_s:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"slurmrestd: {_what(exc)}") from None
        if r.status_code in (401, 403) or cred.expired():
            why = f"expired at {cred.expiry_text()}" if cred.expired() else "refused"
            raise SubmitError(
                FAIL_SUBMIT_AUTH, f"the token of {cred.user} was {why} (HTTP {r.status_code})"
            )
        try:
            doc = json.loads(r.content)
        except ValueError:
            raise SubmitError(
                FAIL_SUBMIT_ERROR, f"slurmrestd answered HTTP {r.status_code} without JSON"
            ) from None
        errors = doc.get("errors") if isinstance(doc, dict) else None
        if errors:
            return _raise_submit(errors)
        jid = doc.get("job_id") if isinstance(doc, dict) else None
        if not isinstance(jid, int) or jid <= 0:
            raise SubmitError(FAIL_SUBMIT_ERROR, f"slurmrestd gave no job_id: {str(doc)[:200]}")
        return str(jid)

    async def jobs(self, cred: Credential) -> bytes:
        """``GET jobs``: the same document as ``squeue --json`` (parsed by the caller)."""
        r = await self._get(cred, "jobs")
        return r.content

    async def _get(self, cred: Credential, path: str) -> httpx.Response:
        if cred.expired():  # known without asking; slurmctld would answer "Unspecified error"
            raise BackendError(
                f"the Slurm token of {cred.user} expired at {cred.expiry_text()}",
                where=f"GET {path}",
                fix=FIX_TOKEN,
            )
        try:
            r = await self._http().get(self._url(path), headers=self._headers(cred))
        except httpx.HTTPError as exc:
            raise BackendError(
                f"slurmrestd: {_what(exc)}",
                where=f"GET {path}",
                fix="check that slurmrestd runs and backend.options.rest.url points at it",
            ) from None
        if r.status_code in (401, 403) or (r.status_code >= 400 and cred.expired()):
            why = f"expired at {cred.expiry_text()}" if cred.expired() else "was refused"
            raise BackendError(
                f"the Slurm token of {cred.user} {why} (HTTP {r.status_code})",
                where=f"GET {path}",
                fix=FIX_TOKEN,
            )
        if r.status_code >= 400:
            raise BackendError(
                f"slurmrestd answered HTTP {r.status_code}: {_errors_of(r)}", where=f"GET {path}"
            )
        return r


def _raise_submit(errors: Any) -> str:
    text = describe_errors(errors)
    low = text.lower()
    kind = FAIL_SUBMIT_ERROR
    if "invalid" in low or "unavailable" in low or "limit" in low or "denied" in low:
        kind = FAIL_SUBMIT_REJECTED
    raise SubmitError(kind, f"slurmrestd refused the job: {text}")


def _doc(r: httpx.Response, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(r.content)
    except ValueError:
        raise BackendError(
            f"slurmrestd answered HTTP {r.status_code} to {what} without JSON", where=what
        ) from None
    if not isinstance(doc, dict):
        raise BackendError(f"slurmrestd's {what} reply is not a JSON object", where=what)
    if doc.get("errors"):
        raise BackendError(
            f"slurmrestd's {what} reply has errors: {describe_errors(doc['errors'])}", where=what
        )
    return doc


def _errors_of(r: httpx.Response) -> str:
    try:
        doc = json.loads(r.content)
    except ValueError:
        return r.text.strip()[:200] or "no message"
    errors = doc.get("errors") if isinstance(doc, dict) else None
    return describe_errors(errors) if errors else str(doc)[:200]


def _what(exc: httpx.HTTPError) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]
