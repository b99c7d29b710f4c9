"""``gridbench serve``: the web dashboard over the results store.

Binds 127.0.0.1 by default. Any other address needs a token (from an environment
variable or a file, never the command line, where ``ps`` would show it); only its hash is
kept in memory.
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

from gridbench.errors import GridbenchError

MIN_TOKEN_CHARS = 16
#: Connections (and tasks) uvicorn serves at once; more get 503 instead of exhausting it.
LIMIT_CONCURRENCY = 200


def read_token(args: argparse.Namespace) -> str | None:
    """The token from --token-env or --token-file (None when neither is given)."""
    token: str | None = None
    if args.token_env:
        token = os.environ.get(args.token_env)
        if not token:
            raise GridbenchError(
                f"environment variable {args.token_env} is empty or unset",
                where="--token-env",
                fix=f"export {args.token_env}=<a long random token>",
            )
    elif args.token_file:
        try:
            lines = Path(args.token_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise GridbenchError(
                f"cannot read the token file: {exc.strerror or exc}",
                where=args.token_file,
                fix="give a readable file holding the token",
            ) from None
        token = lines[0].strip() if lines else ""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise GridbenchError(
            f"the token is shorter than {MIN_TOKEN_CHARS} characters",
            where="--token-env" if args.token_env else "--token-file",
            fix="use a long random token, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe())'",
        )
    return token


def _check_port(host: str, port: int) -> None:
    """One clear error for a port in use or an address this machine does not have."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, addr = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
    except OSError as exc:
        raise GridbenchError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            where="--host/--port",
            fix="choose another --port, or stop the server already using it",
        ) from None


def cmd_serve(args: argparse.Namespace, ui: object = None) -> int:
    """``gridbench serve`` (declared in :mod:`gridbench.cli.declared`; ``gridbench study serve``
    calls it too)."""
    import uvicorn

    from gridbench.net import is_loopback
    from gridbench.store.layout import results_root
    from gridbench.web.app import WebConfig, create_app
    from gridbench.web.security import AccessPolicy, hash_token

    if not 0 < args.port < 65536:
        raise GridbenchError(f"port {args.port} is out of range", where="--port", fix="1-65535")
    if args.max_running < 1:
        raise GridbenchError("--max-running must be at least 1", where="--max-running")
    if args.max_queued < 0:
        raise GridbenchError("--max-queued must be 0 or more", where="--max-queued")
    token = read_token(args)
    loopback = is_loopback(args.host)
    if not loopback and token is None:
        raise GridbenchError(
            f"refusing to serve on {args.host} without an access token",
            where="--host",
            fix="keep the default 127.0.0.1 (use an SSH tunnel), or give --token-env VAR "
            "or --token-file FILE",
        )
    hosts = set(args.allow_host)
    if loopback:
        hosts |= {"127.0.0.1", "localhost", "::1", args.host}
    policy = AccessPolicy(token_hash=hash_token(token) if token else None, allowed_hosts=hosts)
    del token
    _check_port(args.host, args.port)
    root = results_root(args.results)
    root.mkdir(parents=True, exist_ok=True)
    app = create_app(
        WebConfig(
            root=root, policy=policy, max_running=args.max_running, max_queued=args.max_queued
        )
    )
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"gridbench dashboard on http://{shown}:{args.port}/ (results: {root}); "
        "Ctrl-C stops it and aborts its runs as Ctrl-C does",
        flush=True,
    )
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
        server_header=False,
        limit_concurrency=LIMIT_CONCURRENCY,
        # the client is the socket's peer: uvicorn would otherwise take X-Forwarded-For
        # from a loopback peer, and the login throttle, keyed on the client, was bypassed
        # by rotating that header
        proxy_headers=False,
    )
    uvicorn.Server(config).run()
    return 0
