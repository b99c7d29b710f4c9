"""``gridbench study serve``: a study delivered in the browser. Creates the run (or reopens
one), issues each participant a personal link and prints it once (the log keeps only its
hash), prints the admin and observer pages, then runs the dashboard."""

from __future__ import annotations

import argparse
import socket

from gridbench.errors import GridbenchError, ResultsError, SpecError
from gridbench.family import Ui
from gridbench.fmt import safe_markup


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()  # a wildcard is no address to give participants
    return f"[{host}]" if ":" in host else host


def _check_serve(args: argparse.Namespace) -> None:
    """What would make the server refuse to start, checked before a run is created."""
    from gridbench.net import is_loopback

    if not is_loopback(args.host) and not (args.token_env or args.token_file):
        raise GridbenchError(
            f"refusing to serve on {args.host} without an access token",
            where="--host",
            fix="keep the default 127.0.0.1 (use an SSH tunnel), or give --token-env VAR "
            "or --token-file FILE",
        )
    try:
        family, _, _, _, addr = socket.getaddrinfo(args.host, args.port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
    except (OSError, OverflowError) as exc:
        raise GridbenchError(
            f"cannot listen on {args.host}:{args.port}: {getattr(exc, 'strerror', None) or exc}",
            where="--host/--port",
            fix="choose another --port, or stop the server already using it",
        ) from None


def cmd_serve(args: argparse.Namespace, ui: Ui) -> int:
    from gridbench.store.catalogue import resolve_run
    from gridbench.study.delivery import StudyDelivery
    from gridbench.study.load import load_study_spec
    from gridbench.study.runs import create_study_run

    if (args.spec is None) == (args.run is None):
        raise GridbenchError(
            "give a study spec or --run RUN (not both)",
            where="gridbench study serve",
            fix="gridbench study serve SPEC   or   gridbench study serve --run latest",
        )
    if args.run is not None and args.set:
        raise GridbenchError(
            "--set changes a spec; a reopened study keeps the spec it was started with",
            where="--set",
            fix="drop --set, or start a new study: gridbench study serve SPEC --set ...",
        )
    if args.spec is not None and args.new_links:
        raise GridbenchError(
            "--new-links re-issues the links of a study already served",
            where="--new-links",
            fix="use it with --run RUN (a new study from SPEC gets new links anyway)",
        )
    _check_serve(args)
    root = ui.results_root(args)
    if args.spec is not None:
        spec, data = load_study_spec(args.spec, args.set)
        if not spec.participants:
            raise SpecError(
                "a study delivered in the browser needs its participants declared",
                where=f"{args.spec}: participants",
                fix="list the participants' pseudonyms, e.g. participants: [P01, P02, P03]",
            )
        run = create_study_run(root, spec, data, delivery="browser")
        delivery = StudyDelivery(run.path, spec)
        fresh = True
    else:
        run = resolve_run(args.run, root)
        experiment = run.read_experiment()
        if experiment.get("kind") != "study" or experiment.get("delivery") != "browser":
            raise ResultsError(
                "not a study delivered in the browser",
                where=str(run.path),
                fix="give a run made by 'gridbench study serve SPEC' (see 'gridbench list')",
            )
        root = run.path.parent  # the server must serve the folder the run is in
        args.results = str(root)
        delivery = StudyDelivery.open(run.path)
        fresh = args.new_links
    base = f"http://{_url_host(args.host)}:{args.port}"
    ui.console.print(f"study [bold]{safe_markup(delivery.spec.name)}[/]: run {safe_markup(run.id)}")
    if fresh:
        ui.console.print(
            "personal links (shown once, never stored: give each participant their own; "
            "'--run ... --new-links' replaces them all):"
        )
        for who in delivery.spec.participants:
            secret = delivery.issue_link(who)
            ui.console.print(f"  {who}  {base}/p/{run.id}/{secret}", markup=False, soft_wrap=True)
    else:
        ui.console.print(
            "the links issued before keep working ('--new-links' issues new ones and revokes them)"
        )
    ui.console.print(f"admin page:    {base}/studies/{run.id}", markup=False, soft_wrap=True)
    ui.console.print(
        f"observer page: {base}/studies/{run.id}/observer", markup=False, soft_wrap=True
    )
    ui.console.file.flush()
    return ui.serve(args)
