"""Access control of the dashboard: token, CSRF, Host check and security headers.

The token is never kept: only its SHA-256 is, and a presented token is hashed and
compared in constant time. CSRF uses a double-submit token: a random value in an
HttpOnly, SameSite=Strict cookie that every state-changing request must repeat in a form
field or an ``X-CSRF-Token`` header (pages carry it in a ``<meta>`` tag and hidden
inputs). The Host header is checked against the bound names, which defeats DNS
rebinding of a loopback-only server.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

CSRF_COOKIE = "gb_csrf"
AUTH_COOKIE = "gb_auth"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
MAX_BODY_BYTES = 2 * 1024 * 1024
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

#: Scripts, styles, data and fetches only from this server; nothing may frame the pages.
#: Inline styles are allowed because plotly.js sets element styles while drawing.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # no-referrer would make form posts send Origin: null
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}


def hash_token(token: str) -> str:
    """The stored form of a token (hex SHA-256)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_matches(presented: str | None, stored_hash: str) -> bool:
    """Whether ``presented`` hashes to ``stored_hash``, in constant time."""
    if not presented:
        return False
    return hmac.compare_digest(hash_token(presented), stored_hash)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class AccessPolicy:
    """What the middleware enforces for one server."""

    token_hash: str | None = None
    allowed_hosts: set[str] = field(default_factory=set)  # empty: any Host header
    sessions: set[str] = field(default_factory=set)  # hashes of login session ids

    def login(self, presented: str) -> str | None:
        """A new session id when ``presented`` is the token (only its hash is kept)."""
        if self.token_hash is None or not token_matches(presented, self.token_hash):
            return None
        sid = secrets.token_urlsafe(32)
        self.sessions.add(hash_token(sid))
        return sid

    def authorised(self, request: Request) -> bool:
        if self.token_hash is None:
            return True
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return token_matches(auth[7:].strip(), self.token_hash)
        sid = request.cookies.get(AUTH_COOKIE)
        return bool(sid) and any(token_matches(sid, h) for h in self.sessions)

    @property
    def needs_token(self) -> bool:
        return self.token_hash is not None


def _host_name(header: str) -> str:
    if header.startswith("["):  # [::1]:8080
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _same_origin(request: Request) -> bool:
    """An Origin (or Referer) header, when the browser sends one, must be this server."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:
        return True  # non-browser clients; the CSRF token still has to match
    parts = urlsplit(origin)
    return parts.netloc == request.headers.get("host", "")


def csrf_token(request: Request) -> str:
    """This client's CSRF token (the cookie's, or a new one the response will set)."""
    tok = request.cookies.get(CSRF_COOKIE)
    if tok and len(tok) == 43:
        return tok
    new: str | None = getattr(request.state, "new_csrf", None)
    if new is None:
        new = secrets.token_urlsafe(32)
        request.state.new_csrf = new
    return new


async def csrf_ok(request: Request) -> bool:
    """The request repeats the cookie's CSRF token in a header or a form field."""
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not _same_origin(request):
        return False
    sent = request.headers.get(CSRF_HEADER)
    if sent is None:
        ctype = request.headers.get("content-type", "")
        if ctype.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
            await request.body()  # cached, so the endpoint can read the form again
            form = await request.form()  # starlette caches it for the endpoint
            value = form.get(CSRF_FIELD)
            sent = value if isinstance(value, str) else None
    return sent is not None and hmac.compare_digest(sent.encode(), cookie.encode())


Endpoint = Callable[[Request], Awaitable[Response]]


def make_middleware(policy: AccessPolicy) -> Callable[[Request, Endpoint], Awaitable[Response]]:
    """An HTTP middleware enforcing ``policy`` and adding the security headers."""

    async def middleware(request: Request, call_next: Endpoint) -> Response:
        host = _host_name(request.headers.get("host", ""))
        if policy.allowed_hosts and host not in policy.allowed_hosts:
            return _secure(PlainTextResponse("unexpected Host header", status_code=400))
        path = request.url.path
        public = path.startswith("/static/") or path == "/login"
        if not public and not policy.authorised(request):
            if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                return _secure(RedirectResponse("/login", status_code=303))
            return _secure(PlainTextResponse("a valid token is required", status_code=401))
        if request.method not in SAFE_METHODS:
            too_big = PlainTextResponse("request too large (max 2 MiB)", status_code=413)
            if int(request.headers.get("content-length") or 0) > MAX_BODY_BYTES:
                return _secure(too_big)
            if len(await request.body()) > MAX_BODY_BYTES:  # chunked: no content-length
                return _secure(too_big)
        if request.method not in SAFE_METHODS and not await csrf_ok(request):
            return _secure(
                PlainTextResponse(
                    "CSRF check failed: reload the page and try again", status_code=403
                )
            )
        response = await call_next(request)
        new = getattr(request.state, "new_csrf", None)
        if new is not None:
            response.set_cookie(
                CSRF_COOKIE, new, httponly=True, samesite="strict", path="/", secure=False
            )
        return _secure(response)

    return middleware


def _secure(response: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)
    return response
