"""Shared helpers for the ingest tests: EDGI report writers, client events, a loopback
HTTP server serving real directory listings. (No tests here.)"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from gridbench.jobflow.events.model import EVENT_SCHEMA

T0 = datetime(2024, 6, 10, 12, 0, 0, tzinfo=UTC)
T0_NS = int(T0.timestamp()) * 1_000_000_000


def record(event: str, job_id: str | None, dt: str | None, **fields: str) -> dict[str, Any]:
    return {"event": event, "job_id": job_id, "dt": dt, **fields}


def report_xml(
    records: Sequence[dict[str, Any]], *, timezone: str = "GMT", close: bool = True
) -> str:
    """An EDGI report, one element per line so line numbers are predictable.

    Line 1 is ``<report>``; record i (0-based) starts on line ``2 + i * per`` where
    ``per`` is its own element count + 2.
    """
    stamp = T0_NS // 1_000_000 + 3_600_000  # written an hour after T0
    lines = [f'<report timestamp="{stamp}" timezone="{timezone}" version="1.1">']
    for r in records:
        lines.append("  <metric_data>")
        for tag, key in (
            ("dt", "dt"),
            ("event", "event"),
            ("job_id", "job_id"),
            ("job_id_bridge", "next_id"),
            ("status", "status"),
            ("application", "application"),
        ):
            if r.get(key) is not None:
                lines.append(f"    <{tag}>{r[key]}</{tag}>")
        lines.append("  </metric_data>")
    if close:
        lines.append("</report>")
    return "\n".join(lines) + "\n"


def write_report(path: Path, records: Sequence[dict[str, Any]], **kw: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report_xml(records, **kw), encoding="utf-8")
    return path


def client_events(pairs: Sequence[tuple[str, str]], *, t0_ns: int = T0_NS) -> pl.DataFrame:
    """intended/submit/submit_ack events for (gridbench job, CE id) pairs, 1 job/s."""
    rows = []
    for i, (job, ce_id) in enumerate(pairs):
        t = t0_ns + i * 1_000_000_000
        rows.append((job, "intended", t, "client", 1000, "local", 0, ""))
        rows.append((job, "submit", t + 1_000_000, "client", 1000, "local", 0, ""))
        rows.append(
            (
                job,
                "submit_ack",
                t + 5_000_000,
                "client",
                1000,
                "local",
                0,
                f'{{"backend_id":"{ce_id}"}}',
            )
        )
    return pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")


def two_tier_records(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """CE and bridge records for n jobs: ce ids 'ce-i', bridge ids 'br-i'."""
    ce: list[dict[str, Any]] = []
    br: list[dict[str, Any]] = []
    for i in range(n):
        s = i  # second offset of the job
        ce.append(record("job_entry", f"ce-{i}", f"2024-06-10 12:00:{s:02d}.100"))
        ce.append(
            record(
                "job_submission",
                f"ce-{i}",
                f"2024-06-10 12:00:{s:02d}.200",
                next_id=f"br-{i}",
                status="Submitted",
            )
        )
        br.append(record("job_entry", f"br-{i}", f"2024-06-10 12:00:{s:02d}.300"))
        br.append(
            record("job_status", f"br-{i}", f"2024-06-10 12:00:{s:02d}.400", status="Running")
        )
        br.append(
            record("job_submission", f"br-{i}", f"2024-06-10 12:00:{s:02d}.500", next_id=f"dg-{i}")
        )
        br.append(record("job_status", f"br-{i}", f"2024-06-10 12:01:{s:02d}", status="Finished"))
        ce.append(record("job_status", f"ce-{i}", f"2024-06-10 12:02:{s:02d}", status="done"))
    return ce, br


class _Handler(http.server.SimpleHTTPRequestHandler):
    """http.server's own listings, plus a few special paths for hostile-server tests."""

    sent: ClassVar[dict[str, int]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        special = getattr(self.server, "special", {})
        if self.path in special:
            special[self.path](self)
            return
        super().do_GET()


def stream_bytes(total: int, *, declare_length: bool, key: str) -> Any:
    """A special route sending ``total`` bytes of XML-ish text; records how much got out."""

    def route(h: _Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/xml")
        if declare_length:
            h.send_header("Content-Length", str(total))
        h.end_headers()
        chunk = b"<!-- " + b"x" * 65_000 + b" -->\n"
        sent = 0
        try:
            h.wfile.write(b"<report>\n")
            while sent < total:
                h.wfile.write(chunk)
                sent += len(chunk)
                _Handler.sent[key] = sent
        except (BrokenPipeError, ConnectionResetError):
            pass
        h.close_connection = True

    return route


def redirect_to(location: str) -> Any:
    def route(h: _Handler) -> None:
        h.send_response(302)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return route


@contextmanager
def serve(directory: Path, special: dict[str, Any] | None = None) -> Iterator[str]:
    """Serve ``directory`` on a loopback port in a thread; yields the base URL."""

    def handler(*args: Any, **kwargs: Any) -> _Handler:
        return _Handler(*args, directory=str(directory), **kwargs)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.special = special or {}  # type: ignore[attr-defined]
    srv.daemon_threads = True
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        th.join(timeout=5)


def record_line(text: str, needle: str) -> int:
    """1-based line of the ``<metric_data>`` that contains ``needle``."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if needle in ln)
    while "<metric_data>" not in lines[i]:
        i -= 1
    return i + 1
