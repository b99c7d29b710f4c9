"""Access control of the dashboard: token, CSRF, Host check and security headers.

The token is never kept: only its SHA-256 is, and a presented token is hashed and
compared in constant time. CSRF uses a double-submit token: a random value in an
HttpOnly, SameSite=Strict cookie that every state-changing request must repeat in a form
field or an ``X-CSRF-Token`` header (pages carry it in a ``<meta>`` tag and hidden
inputs). The Host header is checked against the bound names, which defeats DNS
rebinding of a loopback-only server.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_COOKIE = "gb_csrf"
AUTH_COOKIE = "gb_auth"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
MAX_BODY_BYTES = 2 * 1024 * 1024
SESSION_MAX_AGE_S = 12 * 3600
MAX_SESSIONS = 64  # the oldest session is logged out beyond this
#: After n failed logins from one address, the next answer waits min(2**(n-1) / 4, 8) s.
#: One attempt per address is checked at a time: another that arrives meanwhile is
#: answered 429 at once, so parallel guesses cannot share one wait. A session cookie is
#: never slowed or refused, and a correct token gets in after at most the current wait.
LOGIN_DELAY_MAX_S = 8.0
LOGIN_FAILURES_KEPT = 1024
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


@dataclass
class AccessPolicy:
    """What the middleware enforces for one server."""

    token_hash: str | None = None
    allowed_hosts: set[str] = field(default_factory=set)  # empty: any Host header
    #: hashes of login session ids -> expiry (monotonic seconds), oldest first
    sessions: OrderedDict[str, float] = field(default_factory=OrderedDict)
    #: failed logins per client address: (count, time of the last one)
    failures: OrderedDict[str, tuple[int, float]] = field(default_factory=OrderedDict)
    #: addresses with a login attempt being checked now
    checking: set[str] = field(default_factory=set)

    @contextlib.contextmanager
    def attempt(self, client: str) -> Iterator[bool]:
        """Whether this login attempt from ``client`` may be checked now: False while
        another from the same address is (waiting out its delay or being checked)."""
        if client in self.checking:
            yield False
            return
        self.checking.add(client)
        try:
            yield True
        finally:
            self.checking.discard(client)

    def login(self, presented: str, client: str = "") -> str | None:
        """A new session id when ``presented`` is the token (only its hash is kept)."""
        if self.token_hash is None or not token_matches(presented, self.token_hash):
            n = self.failures.pop(client, (0, 0.0))[0] + 1
            self.failures[client] = (n, time.monotonic())
            while len(self.failures) > LOGIN_FAILURES_KEPT:
                self.failures.popitem(last=False)
            return None
        self.failures.pop(client, None)
        sid = secrets.token_urlsafe(32)
        self.sessions[hash_token(sid)] = time.monotonic() + SESSION_MAX_AGE_S
        while len(self.sessions) > MAX_SESSIONS:
            self.sessions.popitem(last=False)
        return sid

    def login_delay(self, client: str) -> float:
        """Seconds to wait before answering a login attempt from ``client`` (grows with
        its recent failures, forgotten after an hour)."""
        n, last = self.failures.get(client, (0, 0.0))
        if n == 0 or time.monotonic() - last > 3600:
            return 0.0
        return float(min(2 ** (n - 1) / 4, LOGIN_DELAY_MAX_S))

    def logout(self, sid: str | None) -> None:
        if sid:
            self.sessions.pop(hash_token(sid), None)

    def _session_ok(self, sid: str | None) -> bool:
        if not sid:
            return False
        h = hash_token(sid)
        # dict lookup by the hash of a random 256-bit id: nothing to learn from its timing
        expiry = self.sessions.get(h)
        if expiry is None:
            return False
        if time.monotonic() > expiry:
            del self.sessions[h]
            return False
        return True

    def authorised(self, request: Request) -> bool:
        if self.token_hash is None:
            return True
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return token_matches(auth[7:].strip(), self.token_hash)
        return self._session_ok(request.cookies.get(AUTH_COOKIE))

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


def bad_form(exc: Exception) -> PlainTextResponse:
    """400 for a form body that cannot be read (not a 500 with a traceback)."""
    why = exc.detail if isinstance(exc, HTTPException) else str(exc)
    return PlainTextResponse(f"the form could not be read: {why}", status_code=400)


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
        # a participant's study link (/p/<run>/<secret>) is its own credential: the
        # route checks the secret, and CSRF below still applies to its posts
        public = path.startswith(("/static/", "/p/")) or path == "/login"
        if not public and not policy.authorised(request):
            if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                return _secure(RedirectResponse("/login", status_code=303))
            return _secure(PlainTextResponse("a valid token is required", status_code=401))
        # (the body size is capped by BodyLimit, outside this middleware)
        try:
            checked = request.method in SAFE_METHODS or await csrf_ok(request)
        except (MultiPartException, HTTPException) as exc:  # a part over 1 MiB, a bad boundary
            return _secure(bad_form(exc))
        if not checked:
            return _secure(
                PlainTextResponse(
                    "CSRF check failed: reload the page and try again", status_code=403
                )
            )
        response = await call_next(request)
        new = getattr(request.state, "new_csrf", None)
        if new is not None:
            response.set_cookie(
                CSRF_COOKIE, new, httponly=True, samesite="strict", path="/",
                secure=request.url.scheme == "https",
            )  # fmt: skip
        if not path.startswith("/static/"):
            # pages and downloads may hold results behind the token: no shared caches
            response.headers.setdefault("cache-control", "no-store")
        return _secure(response)

    return middleware


def _secure(response: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)
    return response


class HeadAsGet:
    """ASGI middleware answering HEAD as GET without the body (FastAPI's routes declare
    GET only, so HEAD would be 405): the status and headers are the GET's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return
        done = False

        async def headers_only(message: Message) -> None:
            nonlocal done
            if done:
                return  # a streaming GET goes on; a HEAD answer ended at its headers
            if message["type"] == "http.response.body":
                done = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


class BodyLimit:
    """ASGI middleware capping request bodies at ``max_bytes`` as they arrive: a declared
    Content-Length above it is refused at once, and a chunked body is cut off at the first
    chunk that crosses it (nothing past the cap is buffered)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        too_big = _secure(
            PlainTextResponse(
                f"request too large (max {self.max_bytes // (1024 * 1024)} MiB)",
                status_code=413,
                headers={"connection": "close"},
            )
        )
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.max_bytes + 1
                if declared > self.max_bytes:
                    await too_big(scope, receive, send)
                    return
        seen = 0
        started = cut_off = False

        async def counted() -> Message:
            # Past the cap the 413 is sent here, whoever is reading (a middleware, a form
            # parser, an endpoint), and the reader sees a client that went away: an
            # exception raised here would reach the client as a 500 (wrapped in task groups).
            nonlocal seen, started, cut_off
            if cut_off:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    cut_off = True
                    if not started:
                        started = True
                        await too_big(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if cut_off:
                return  # the 413 was the answer
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except Exception:
            if not cut_off:
                raise
            # the reader failed on the body we cut off (ClientDisconnect): answered already
