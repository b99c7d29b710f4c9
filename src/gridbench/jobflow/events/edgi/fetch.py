"""Finding and fetching monitoring-report files: local directories or HTTP(S) listings.

Report servers are untrusted. A listing is an Apache-style (or ``python -m http.server``)
HTML page; only ``<a href>`` links that resolve to a direct child of the source URL are
followed (same scheme and host, no ``..``, no query), redirects are followed only when
they stay under the source URL, and every download is streamed and abandoned past a size
limit before anything is parsed. Requests time out and are retried once.

A source is tagged with the tier (component) whose reports it holds
(:mod:`gridbench.jobflow.events.tiers`). A single bare source whose listing holds no
report files but sub-directories is a *tier root*: each sub-directory (``ce/``,
``bridge/``) is a tier named after it.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import httpx

from gridbench.errors import IngestError
from gridbench.jobflow.events.tiers import TIER_RE, ReportSource, is_url

DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_LISTING_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_LINKS = 10_000
DEFAULT_TIMEOUT_S = 10.0
RETRY_DELAY_S = 0.5
MAX_REDIRECTS = 3
REPORT_SUFFIX = ".xml"
#: a server whose Last-Modified is this close to its Date may still be writing the file,
#: so If-Modified-Since (1 s resolution) is not trusted for it
STABLE_AFTER_S = 2.0

UNREACHABLE_FIX = (
    "check that the report server is running and the URL is right (open it with a browser "
    "or curl); a local directory of report files also works"
)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """Safety limits for untrusted report sources."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_listing_bytes: int = DEFAULT_MAX_LISTING_BYTES
    max_links: int = DEFAULT_MAX_LINKS
    timeout_s: float = DEFAULT_TIMEOUT_S
    concurrency: int = 8


# --- listings -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReportFile:
    """One report file: its tier, a stable key, and where to read it."""

    tier: str
    key: str  # URL or absolute path; identity across polls
    url: str | None = None
    path: Path | None = None

    @property
    def display(self) -> str:
        return self.key


@dataclass(slots=True)
class Listing:
    files: list[str] = field(default_factory=list)  # URLs or paths
    dirs: list[tuple[str, str]] = field(default_factory=list)  # (name, URL or path)
    warnings: list[str] = field(default_factory=list)


class _LinkParser(HTMLParser):
    def __init__(self, max_links: int) -> None:
        super().__init__(convert_charrefs=True)
        self.max_links = max_links
        self.links: list[str] = []
        self.overflow = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        for k, v in attrs:
            if k == "href" and v:
                if len(self.links) < self.max_links:
                    self.links.append(v.strip())
                else:
                    self.overflow += 1


def child_links(base_url: str, hrefs: Sequence[str]) -> Listing:
    """Keep the links that name a direct child of ``base_url`` (``*.xml`` files and dirs).

    Links to other hosts or schemes and links escaping the directory (``..``, encoded
    slashes) are dropped with one warning; parent-directory and sort links silently.
    """
    base = urlsplit(base_url)
    out = Listing()
    seen: set[str] = set()
    foreign = 0
    for href in hrefs:
        if not href or href.startswith(("?", "#")):
            continue
        url = urljoin(base_url, href)
        p = urlsplit(url)
        if p.scheme.lower() != base.scheme.lower() or p.netloc.lower() != base.netloc.lower():
            foreign += 1
            continue
        if p.query or p.fragment:
            continue
        if not p.path.startswith(base.path):
            if not base.path.startswith(p.path):  # a parent link is normal, anything else not
                foreign += 1
            continue
        rest = p.path[len(base.path) :]
        is_dir = rest.endswith("/")
        segs = (rest[:-1] if is_dir else rest).split("/")
        if not rest or len(segs) != 1:
            continue  # deeper than one level: not ours to follow from here
        name = unquote(segs[0])
        if name in ("", ".", "..") or any(c in name for c in "/\\\x00"):
            foreign += 1
            continue
        clean = urlunsplit((p.scheme, p.netloc, p.path, "", ""))
        if clean in seen:
            continue
        seen.add(clean)
        if is_dir:
            out.dirs.append((name, clean))
        elif name.lower().endswith(REPORT_SUFFIX) and not name.startswith("."):
            out.files.append(clean)
    if foreign:
        out.warnings.append(
            f"{base_url}: ignored {foreign} link(s) leading outside this directory "
            "(other hosts or '..'); only files under the given URL are read"
        )
    return out


def list_local_dir(directory: str | os.PathLike[str], limits: FetchLimits) -> Listing:
    """List ``*.xml`` files and sub-directories of a local directory (no escaping symlinks)."""
    root = Path(directory)
    try:
        real_root = root.resolve(strict=True)
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError as exc:
        raise IngestError(
            "report directory not found",
            where=str(root),
            fix="check the path given with --reports",
        ) from exc
    except (NotADirectoryError, PermissionError) as exc:
        raise IngestError(
            f"cannot list report directory: {exc.strerror}",
            where=str(root),
            fix="give a readable directory holding *.xml report files",
        ) from exc
    out = Listing()
    if len(entries) > limits.max_links:
        out.warnings.append(
            f"{root}: {len(entries)} entries, only the first {limits.max_links} are read "
            "(raise the link limit to read more)"
        )
        entries = entries[: limits.max_links]
    for e in entries:
        if e.name.startswith("."):
            continue  # editors' and writers' temporary files
        p = Path(e.path)
        try:
            if e.is_symlink() and not p.resolve(strict=True).is_relative_to(real_root):
                out.warnings.append(f"{p}: symlink leads outside {root}; ignored")
                continue
            if e.is_dir():
                out.dirs.append((e.name, str(p)))
            elif e.is_file() and e.name.lower().endswith(REPORT_SUFFIX):
                out.files.append(str(p))
        except OSError:
            continue  # vanished or dangling: nothing to read
    return out


# --- HTTP -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Response:
    status: int
    url: str
    headers: httpx.Headers
    body: bytes | None = None
    too_large: bool = False
    declared_size: int | None = None


def _under(url: str, root: str) -> bool:
    a, b = urlsplit(url), urlsplit(root)
    return (
        a.scheme.lower() == b.scheme.lower()
        and a.netloc.lower() == b.netloc.lower()
        and a.path.startswith(b.path)
        and ".." not in unquote(a.path).split("/")
    )


async def _get_once(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], max_bytes: int
) -> _Response:
    async with client.stream("GET", url, headers=headers) as r:
        resp = _Response(r.status_code, url, r.headers)
        if r.status_code != 200:
            return resp
        cl = r.headers.get("content-length", "")
        if cl.isdigit():
            resp.declared_size = int(cl)
            if int(cl) > max_bytes:
                resp.too_large = True  # rejected before a byte of the body is read
                return resp
        buf = bytearray()
        async for chunk in r.aiter_bytes():
            buf += chunk
            if len(buf) > max_bytes:
                resp.too_large = True
                return resp
        resp.body = bytes(buf)
        return resp


async def http_get(
    client: httpx.AsyncClient,
    url: str,
    *,
    root: str,
    limits: FetchLimits,
    max_bytes: int,
    headers: dict[str, str] | None = None,
) -> _Response:
    """GET with a size limit, one retry on transport errors and 5xx, safe redirects only.

    Raises ``httpx.HTTPError`` (after the retry) or ``IngestError`` for a redirect that
    leaves ``root``.
    """
    hdrs = dict(headers or {})
    for _hop in range(MAX_REDIRECTS + 1):
        resp: _Response | None = None
        for attempt in (1, 2):
            try:
                async with asyncio.timeout(limits.timeout_s * 6):  # slow-drip guard
                    resp = await _get_once(client, url, hdrs, max_bytes)
            except (httpx.TransportError, TimeoutError):
                if attempt == 2:
                    raise
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            if resp.status >= 500 and attempt == 1:
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            break
        assert resp is not None
        if resp.status in (301, 302, 303, 307, 308):
            target = urljoin(url, resp.headers.get("location", ""))
            if not _under(target, root):
                raise IngestError(
                    f"redirects to {target}, outside the report URL; not followed",
                    where=url,
                    fix="give the final URL of the report directory",
                )
            url = target
            continue
        return resp
    raise IngestError("too many redirects", where=url, fix="give the final URL of the directory")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection failed"
    return type(exc).__name__ + (f": {exc}" if str(exc) else "")


async def list_http_dir(
    client: httpx.AsyncClient, url: str, *, root: str, limits: FetchLimits
) -> Listing:
    """Fetch and filter one HTML directory listing; raise IngestError if unreachable."""
    try:
        resp = await http_get(
            client, url, root=root, limits=limits, max_bytes=limits.max_listing_bytes
        )
    except httpx.HTTPError as exc:
        raise IngestError(
            f"cannot reach the monitoring reports ({_describe(exc)}, retried once)",
            where=url,
            fix=UNREACHABLE_FIX,
        ) from exc
    if resp.too_large:
        raise IngestError(
            f"directory listing is larger than {limits.max_listing_bytes} bytes",
            where=url,
            fix="point at a directory with fewer files or raise the listing size limit",
        )
    if resp.status != 200 or resp.body is None:
        raise IngestError(
            f"the report directory answered HTTP {resp.status}",
            where=url,
            fix="check the URL (it must be a directory listing of *.xml report files)",
        )
    parser = _LinkParser(limits.max_links)
    parser.feed(resp.body.decode("utf-8", errors="replace"))
    parser.close()
    out = child_links(resp.url, parser.links)
    if parser.overflow:
        out.warnings.append(
            f"{url}: listing has more than {limits.max_links} links; only the first "
            f"{limits.max_links} are read (raise the link limit to read more)"
        )
    return out


# --- file fetching --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileMeta:
    """What identifies one version of a report file."""

    size: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    stable: bool = False  # Last-Modified is trustworthy for If-Modified-Since
    mtime_ns: int | None = None
    digest: bytes | None = None


FetchKind = Literal["data", "unchanged", "too_large", "gone", "error"]


@dataclass(slots=True)
class Fetched:
    """The outcome of reading one report file."""

    kind: FetchKind
    meta: FileMeta
    data: bytes | None = None
    message: str = ""


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def read_local_file(path: Path, prev: FileMeta | None, limits: FetchLimits) -> Fetched:
    """Read a local report file unless unchanged; never reads more than the limit."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return Fetched("gone", prev or FileMeta())
    meta = FileMeta(size=st.st_size, mtime_ns=st.st_mtime_ns)
    if prev is not None and prev.size == meta.size and prev.mtime_ns == meta.mtime_ns:
        return Fetched("unchanged", prev)
    if st.st_size > limits.max_file_bytes:
        return Fetched("too_large", meta)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limits.max_file_bytes + 1)
    except OSError as exc:
        return Fetched("error", meta, message=f"cannot read: {exc.strerror}")
    if len(data) > limits.max_file_bytes:  # grew between stat and read
        return Fetched("too_large", replace(meta, size=len(data)))
    meta = replace(meta, size=len(data), digest=_digest(data))
    if prev is not None and prev.digest == meta.digest:
        return Fetched("unchanged", meta)
    return Fetched("data", meta, data)


def _is_stable(headers: httpx.Headers) -> bool:
    lm = headers.get("last-modified")
    if not lm:
        return False
    try:
        modified = email.utils.parsedate_to_datetime(lm)
        date_h = headers.get("date")
        now = email.utils.parsedate_to_datetime(date_h) if date_h else datetime.now(UTC)
    except (TypeError, ValueError):
        return False
    return (now - modified).total_seconds() >= STABLE_AFTER_S


async def fetch_http_file(
    client: httpx.AsyncClient, url: str, prev: FileMeta | None, *, root: str, limits: FetchLimits
) -> Fetched:
    """Download a report file unless the server says it is unchanged (ETag/Last-Modified)."""
    headers: dict[str, str] = {}
    if prev is not None:
        if prev.etag:
            headers["If-None-Match"] = prev.etag
        elif prev.last_modified and prev.stable:
            headers["If-Modified-Since"] = prev.last_modified
    try:
        resp = await http_get(
            client, url, root=root, limits=limits, max_bytes=limits.max_file_bytes, headers=headers
        )
    except httpx.HTTPError as exc:
        return Fetched("error", prev or FileMeta(), message=f"{_describe(exc)} (retried once)")
    except IngestError as exc:
        return Fetched("error", prev or FileMeta(), message=exc.message)
    if resp.status == 304 and prev is not None:
        return Fetched("unchanged", prev)
    if resp.status in (404, 410):
        return Fetched("gone", prev or FileMeta())
    if resp.status != 200:
        return Fetched("error", prev or FileMeta(), message=f"HTTP {resp.status}")
    meta = FileMeta(
        size=resp.declared_size,
        etag=resp.headers.get("etag"),
        last_modified=resp.headers.get("last-modified"),
        stable=_is_stable(resp.headers),
    )
    if resp.too_large or resp.body is None:
        return Fetched("too_large", meta)
    meta = replace(meta, size=len(resp.body), digest=_digest(resp.body))
    if prev is not None and prev.digest == meta.digest:
        return Fetched("unchanged", meta)
    return Fetched("data", meta, resp.body)


# --- whole sources --------------------------------------------------------------------


async def _list_any(
    client: httpx.AsyncClient | None, loc: str, root: str, limits: FetchLimits
) -> Listing:
    if is_url(loc):
        if client is None:  # pragma: no cover - the collector always passes one for URLs
            raise IngestError("no HTTP client for a URL source", where=loc)
        return await list_http_dir(client, loc, root=root, limits=limits)
    return await asyncio.to_thread(list_local_dir, loc, limits)


def _file(tier: str, loc: str) -> ReportFile:
    if is_url(loc):
        return ReportFile(tier, loc, url=loc)
    p = Path(loc).absolute()
    return ReportFile(tier, str(p), path=p)


async def list_source(
    client: httpx.AsyncClient | None, source: ReportSource, limits: FetchLimits
) -> tuple[list[ReportFile], list[str]]:
    """All report files of one source, tagged with their tier; IngestError if unreachable."""
    top = await _list_any(client, source.location, source.location, limits)
    warnings = list(top.warnings)
    if not (source.discover and not top.files and top.dirs):
        return [_file(source.tier, f) for f in top.files], warnings
    # a tier root: every sub-directory is a tier named after it
    files: list[ReportFile] = []
    subs = [(n, loc) for n, loc in top.dirs if TIER_RE.match(n)]
    for n, _ in top.dirs:
        if not TIER_RE.match(n):
            warnings.append(f"{source.location}: sub-directory {n!r} is not a tier name; ignored")
    listings = await asyncio.gather(*(_list_any(client, loc, loc, limits) for _, loc in subs))
    for (name, _), lst in zip(subs, listings, strict=True):
        warnings.extend(lst.warnings)
        files.extend(_file(name, f) for f in lst.files)
    return files, warnings


async def fetch_file(
    client: httpx.AsyncClient | None, f: ReportFile, prev: FileMeta | None, limits: FetchLimits
) -> Fetched:
    """Read one report file from wherever it lives."""
    if f.url is not None:
        assert client is not None
        root = f.url.rsplit("/", 1)[0] + "/"
        return await fetch_http_file(client, f.url, prev, root=root, limits=limits)
    assert f.path is not None
    return await asyncio.to_thread(read_local_file, f.path, prev, limits)


def make_client(limits: FetchLimits) -> httpx.AsyncClient:
    """An HTTP client for report servers: time-outs, no automatic redirects."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(limits.timeout_s, connect=min(5.0, limits.timeout_s)),
        follow_redirects=False,
        headers={"User-Agent": "gridbench-ingest"},
        limits=httpx.Limits(max_connections=limits.concurrency),
    )
