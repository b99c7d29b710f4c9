"""Running the reference grid: blocking (:func:`serve`), in a background thread
(:class:`ReferenceGrid`), or as a process (``python -m gridbench.jobflow.reference``).

Only loopback addresses are bound unless ``allow_remote`` is given: the grid has no
authentication.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from gridbench.errors import BackendError, GridbenchError, SpecError
from gridbench.jobflow.cli import REFERENCE_SERVE_ARGS
from gridbench.jobflow.reference.app import create_app
from gridbench.jobflow.reference.config import GridConfig, merge
from gridbench.jobflow.reference.jobs import TIERS, Tier
from gridbench.jobflow.reference.presets import build_config
from gridbench.jobflow.reference.sim import Grid
from gridbench.lifeline import on_stdin_eof
from gridbench.net import is_loopback

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8750


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless ``allow_remote``."""
    if not allow_remote and not is_loopback(host):
        raise SpecError(
            f"refusing to listen on non-loopback address {host!r}: the reference grid has no "
            "authentication",
            where="--host",
            fix="use 127.0.0.1, or pass --allow-remote if you really want it reachable",
        )


def check_tier(tier: str, bridge_url: str | None) -> None:
    """The CE tier alone needs the bridge's URL; the others take none."""
    if tier not in TIERS:
        raise SpecError(f"no tier {tier!r}", where="--tier", fix="use all, ce or bridge")
    if tier == "ce" and not bridge_url:
        raise SpecError(
            "the CE tier alone hands jobs to a bridge: give its URL",
            where="--bridge-url",
            fix="start the bridge tier first (--tier bridge) and pass the URL it prints",
        )
    if tier != "ce" and bridge_url:
        raise SpecError(
            f"--bridge-url is for --tier ce (this is --tier {tier})",
            where="--bridge-url",
            fix="drop --bridge-url, or run --tier ce",
        )


def check_reports_dir(config: GridConfig) -> None:
    """Fail early, with a fix, when the configured reports directory is not writable."""
    d = config.reports.dir
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as exc:
        raise BackendError(
            f"cannot write monitoring reports there: {exc.strerror or exc}",
            where=str(d),
            fix="set reports.dir (or --reports-dir) to a writable directory",
        ) from None


def _bind(host: str, port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise SpecError(f"port {port} out of range", where="--port", fix="use 0..65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on sockets that declare it,
    # and without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BackendError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            where=f"{host}:{port}",
            fix="choose another --port (0 picks a free one) or stop what is using it",
        ) from None
    return sock


def _url(host: str, sock: socket.socket) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _server(
    config: GridConfig, log_level: str, tier: Tier = "all", bridge_url: str | None = None
) -> uvicorn.Server:
    ucfg = uvicorn.Config(
        create_app(config, tier, bridge_url),
        log_level=log_level,
        access_log=False,  # per-request logging would cost more than the simulated work
        lifespan="on",
        loop="asyncio",
        http="h11",
        timeout_graceful_shutdown=3,
    )
    return uvicorn.Server(ucfg)


def _startup_error(
    server: uvicorn.Server, url: str, exc: BaseException | None = None
) -> BackendError:
    """The reason the app did not start, as a user-facing error."""
    app: Any = server.config.app
    found = getattr(app.state, "startup_error", None) if hasattr(app, "state") else None
    if isinstance(found, BackendError):
        return found
    return BackendError(
        f"the reference grid failed to start: {exc or 'see the log above'}",
        where=url,
        fix="check the reports directory is writable and the configuration valid",
    )


def serve(
    config: GridConfig | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
    tier: Tier = "all",
    bridge_url: str | None = None,
) -> None:
    """Run the grid until interrupted (Ctrl-C / SIGTERM); call ``on_ready(url)`` once listening.
    ``tier``: all tiers (the default), the CE alone (handing jobs to ``bridge_url``) or the
    bridge and worker pool alone."""
    check_host(host, allow_remote)
    check_tier(tier, bridge_url)
    config = config or GridConfig()
    check_reports_dir(config)
    sock = _bind(host, port)
    url = _url(host, sock)
    server = _server(config, log_level, tier, bridge_url)

    async def run() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started and on_ready is not None:
            on_ready(url)
        try:
            await task
        except SystemExit:  # uvicorn's way of saying the lifespan start-up failed
            raise _startup_error(server, url) from None
        if not server.started:
            raise _startup_error(server, url)

    try:
        asyncio.run(run())
    finally:
        sock.close()


class ReferenceGrid:
    """The reference grid in a background thread with its own event loop.

    >>> with ReferenceGrid(config) as g:      # or g.start_background(); ...; g.stop()
    ...     url = g.url
    """

    def __init__(
        self,
        config: GridConfig | None = None,
        *,
        log_level: str = "warning",
        tier: Tier = "all",
        bridge_url: str | None = None,
    ) -> None:
        check_tier(tier, bridge_url)
        self.config = config or GridConfig()
        self.tier: Tier = tier
        self.bridge_url = bridge_url
        self._log_level = log_level
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._error: BaseException | None = None
        self.url = ""

    def start_background(
        self,
        host: str = DEFAULT_HOST,
        port: int = 0,
        *,
        allow_remote: bool = False,
        timeout_s: float = 15.0,
    ) -> str:
        """Start serving in a daemon thread; return the base URL once it accepts requests."""
        if self._thread is not None:
            raise RuntimeError("already started")
        check_host(host, allow_remote)
        check_reports_dir(self.config)
        self._sock = _bind(host, port)
        self.url = _url(host, self._sock)
        self._server = server = _server(self.config, self._log_level, self.tier, self.bridge_url)
        sock = self._sock

        def run() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            except BaseException as exc:  # reported to the starting thread
                self._error = exc

        self._thread = threading.Thread(target=run, name="gridbench-reference", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                timed_out = self._thread.is_alive()
                self.stop()
                if timed_out:
                    raise BackendError(
                        f"the reference grid did not start within {timeout_s:g} s",
                        where=self.url,
                        fix="retry; if it persists, run it with --log-level info",
                    )
                raise _startup_error(server, self.url, self._error)
            time.sleep(0.01)
        return self.url

    @property
    def grid(self) -> Grid:
        """The running simulation (read-only use from other threads)."""
        if self._server is None or not self._server.started:
            raise RuntimeError("not started")
        app: Any = self._server.config.app
        return app.state.grid  # type: ignore[no-any-return]

    @property
    def reports_dir(self) -> Path:
        """Where the monitoring reports are written."""
        return self.grid.reports_dir

    def stop(self, timeout_s: float = 10.0) -> None:
        """Shut down (graceful: current report files are closed)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._sock is not None:
            self._sock.close()
        self._thread = None
        self._server = None
        self._sock = None

    def __enter__(self) -> ReferenceGrid:
        if self._thread is None:
            self.start_background()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


# -- command line -------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` options to ``parser``: those ``gridbench reference serve`` declares
    (:data:`gridbench.jobflow.cli.REFERENCE_SERVE_ARGS`, spelled once)."""
    for option in REFERENCE_SERVE_ARGS:
        option.add_to(parser)


def config_from_args(args: argparse.Namespace) -> GridConfig:
    """The configuration the parsed options describe."""
    overrides: dict[str, Any] = {}
    if args.reports_dir:
        overrides["reports"] = {"dir": args.reports_dir}
    if args.seed is not None:
        overrides["seed"] = args.seed
    inline = getattr(args, "config_json", None)
    if inline:
        try:
            given = json.loads(inline)
        except ValueError as exc:
            raise SpecError(f"not JSON: {exc}", where="--config-json") from None
        if not isinstance(given, dict):
            raise SpecError("not a JSON object", where="--config-json")
        overrides = merge(given, overrides)
    return build_config(args.preset, args.config, overrides)


def _stop_on_eof() -> None:
    """Stop (as SIGTERM does: report files closed) once stdin ends."""
    on_stdin_eof(lambda: os.kill(os.getpid(), signal.SIGTERM), name="stop-on-eof")


def run(args: argparse.Namespace) -> int:
    """Serve as described by parsed options; print ``listening on URL`` once ready."""

    def ready(url: str) -> None:
        print(f"listening on {url}", flush=True)

    try:
        config = config_from_args(args)
        if getattr(args, "stop_on_eof", False):
            _stop_on_eof()
        serve(
            config,
            args.host,
            args.port,
            allow_remote=args.allow_remote,
            on_ready=ready,
            log_level=args.log_level,
            tier=getattr(args, "tier", "all"),
            bridge_url=getattr(args, "bridge_url", None),
        )
    except GridbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gridbench.jobflow.reference``: run the reference grid until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m gridbench.jobflow.reference",
        description="Run the gridbench reference grid (a simulated CE -> bridge -> DG chain).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
