"""Schemathesis against the dashboard's OpenAPI schema: no generated request is a 5xx.

The live server (``gridbench serve``, as the other web tests start it) holds one ingested
run; every operation is fuzzed with positive and negative cases, then once more with the
run's real id in its path (random ids only reach the 404s). The schema is the app's own
(``app.openapi()``): the server does not publish it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.result import Err, Ok

from conftest import BIN, cli_env
from web_server import Server, serve

CSRF = "c" * 43
#: The CSRF token sent with every request, so state-changing operations get past the
#: check and reach their handlers (a 403 proves nothing about them).
AUTH = {"headers": {"x-csrf-token": CSRF}, "cookies": {"gb_csrf": CSRF}}
#: Examples per operation and mode: bounded, so the whole file stays well under 60 s.
EXAMPLES = 12
#: Operations whose handlers start or stop work, or stream forever: called with their
#: real run id only by the other web tests.
SKIP_WITH_REAL_ID = {("GET", "/experiments/{rid}/events"), ("POST", "/experiments/{rid}/{action}")}
#: Each failed login slows the next from the address by up to 8 s (test_harden_web covers
#: it): fuzzing it would take minutes.
SKIP = {("POST", "/login")}


def _openapi() -> dict[str, Any]:
    from gridbench.web.app import WebConfig, create_app

    doc: dict[str, Any] = create_app(WebConfig(Path("/nonexistent"))).openapi()
    return doc


def _ingested_run(root: Path) -> str:
    t0 = 1_700_000_000.0
    lines = [
        json.dumps({"job": f"j{i}", "stage": stage, "t_s": t0 + i * 0.5 + dt, "source": "client"})
        for i in range(4)
        for stage, dt in (("intended", 0.0), ("submit", 0.001), ("client_done", 1.0))
    ]
    events = root.parent / "events.jsonl"
    events.write_text("\n".join(lines) + "\n")
    out = root / "fuzzed"
    p = subprocess.run(
        [str(BIN), "ingest", "jsonl", str(events), "--out", str(out)],
        env=cli_env(root), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    return str(json.loads((out / "experiment.json").read_text())["id"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    base = tmp_path_factory.mktemp("schemathesis")
    root = base / "results"
    root.mkdir()
    rid = _ingested_run(root)
    with serve(root, base / "serve.log") as s:
        yield s, rid


def _fuzz(op: Any, url: str, failures: list[str], **fixed: Any) -> None:
    """Run ``op`` with positive and negative cases; note every 5xx in ``failures``."""
    session = requests.Session()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=op.as_strategy(mode, **fixed))
        def check(case: Any) -> None:
            r = case.call(base_url=url, session=session, timeout=30, **AUTH)
            if r.status_code >= 500:
                failures.append(f"{r.status_code} {case.method} {case.formatted_path} "
                                f"{case.query} {r.text[:200]}")  # fmt: skip

        try:
            check()
        except Unsatisfiable:
            # no parameters to get wrong (GET /presets): negative mode has no case
            assert mode is GenerationMode.NEGATIVE, op.label


def test_no_generated_request_is_a_5xx(server: tuple[Server, str]) -> None:
    srv, rid = server
    schema = schemathesis.openapi.from_dict(_openapi())
    failures: list[str] = []
    results = list(schema.get_all_operations())
    bad = [r.err() for r in results if isinstance(r, Err)]
    assert not bad, bad  # the app's own schema is valid OpenAPI
    ops = [r.ok() for r in results if isinstance(r, Ok)]
    assert len(ops) > 10  # the schema is the whole dashboard
    for op in ops:
        if (op.method.upper(), op.path) in SKIP:
            continue
        _fuzz(op, srv.url, failures)
        params = {p.name for p in op.path_parameters}
        if "rid" in params and (op.method.upper(), op.path) not in SKIP_WITH_REAL_ID:
            _fuzz(op, srv.url, failures, path_parameters={"rid": rid})
    assert not failures, "\n".join(failures[:20])
    assert "Traceback" not in srv.tail(2000)


def _spec_documents() -> Any:
    """YAML texts for /start: the families' own keys (and others) with values of any shape,
    or any text at all. ``name`` is never generated: every family requires it, so no
    generated spec can start a run, and each must be refused with a 4xx."""
    from hypothesis import strategies as st

    from gridbench.io.model import IoSpec
    from gridbench.messaging.model import NetSpec

    keys = sorted({*IoSpec.model_fields, *NetSpec.model_fields} - {"name"})
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(keys) | st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    )
    docs = st.dictionaries(st.sampled_from(keys) | st.text(max_size=8), values, max_size=5)
    return docs.map(lambda d: json.dumps(d, default=str)) | st.text(max_size=200)


def test_start_refuses_generated_specs_of_every_family(server: tuple[Server, str]) -> None:
    """The /start route (a spec of a family that starts from one) under generated specs:
    every answer is a 4xx naming the problem, never a 5xx, and no run is started."""
    from hypothesis import strategies as st

    srv, _ = server
    before = {p.name for p in srv.root.iterdir()}
    session = requests.Session()
    answers: set[int] = set()
    kinds = st.sampled_from(["io", "net", "study", "", "nope"])

    @settings(
        max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(kind=kinds, text=_spec_documents())
    def check(kind: str, text: str) -> None:
        r = session.post(
            srv.url + "/start",
            data={"kind": kind, "yaml": text, "csrf": CSRF},
            timeout=30,
            allow_redirects=False,
            **AUTH,
        )
        assert 400 <= r.status_code < 500, (r.status_code, kind, text[:300], r.text[:500])
        answers.add(r.status_code)

    check()
    assert answers == {422}, answers  # refused as a bad spec, not for want of a token
    assert {p.name for p in srv.root.iterdir()} == before  # nothing was started
    assert "Traceback" not in srv.tail(2000)
