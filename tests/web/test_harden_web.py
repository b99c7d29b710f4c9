"""Web hardening: login guesses serialised per address, HEAD like GET, hostile YAML and
oversized bodies are 4xx (never 500), and the secret finder's wider net."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from web_server import Server, csrf_of, serve

TOKEN = "t0ken-for-the-harden-tests-0123456789"
CSRF = "c" * 43


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("harden-web")
    with serve(base / "results", base / "serve.log") as s:
        yield s


def _raw(server: Server, head: bytes, chunks: list[bytes]) -> bytes:
    """Send a request head and then body chunks until the server answers; its answer."""
    import select

    u = urlsplit(server.url)
    assert u.hostname is not None and u.port is not None
    with socket.create_connection((u.hostname, u.port), timeout=20) as s:
        s.sendall(head)
        for c in chunks:
            if select.select([s], [], [], 0)[0]:
                break  # answered before the body ended
            try:
                s.sendall(c)
            except (BrokenPipeError, ConnectionResetError):
                break  # answered and closed while we were still sending
        return s.recv(4096)


def _chunked(parts: list[bytes]) -> list[bytes]:
    return [b"%x\r\n%s\r\n" % (len(p), p) for p in parts]


def test_head_answers_like_get_without_a_body(server: Server) -> None:
    for path in ("/", "/presets", "/new"):
        get = httpx.get(server.url + path)
        head = httpx.head(server.url + path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


def test_hostile_yaml_is_a_clear_422(server: Server) -> None:
    h = {"x-csrf-token": CSRF, "cookie": f"gb_csrf={CSRF}"}
    cases = {
        "name: !!python/object:os.system x\n": "YAML tag '!!python/object:os.system'",
        "name: !foo x\n": "YAML tag '!foo'",
        "name: x\njob: !foo {a: 1}\n": "YAML tag '!foo'",
        "name: x\nbig: " + "9" * 5000 + "\n": "more than 4300 digits",
        "name: x\nb: !!binary aGVsbG8=\n": "YAML type bytes",
    }
    for text, what in cases.items():
        r = httpx.post(server.url + "/api/spec/parse", json={"yaml": text}, headers=h)
        assert r.status_code == 422, (text[:40], r.status_code, r.text[:300])
        assert r.json()["data"] is None and what in r.json()["error"]["message"], r.text
    r = httpx.post(server.url + "/api/spec/parse", json={"yaml": "name: !!str 5\n"}, headers=h)
    assert r.status_code == 200 and r.json()["data"] == {"name": "5"}
    assert "Traceback" not in server.tail(400)


def test_oversized_bodies_are_413_however_they_are_sent(server: Server) -> None:
    big = [b"a" * 65536] * 40  # 2.5 MiB, never finished
    cookie = b"Cookie: gb_csrf=" + CSRF.encode() + b"\r\n"
    head = b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
    # JSON read by the endpoint, past the CSRF check (the cut-off used to be a 500)
    json_head = head % b"/api/spec/parse" + b"Content-Type: application/json\r\n"
    answer = _raw(server, json_head + cookie + b"X-CSRF-Token: " + CSRF.encode() + b"\r\n\r\n",
                  _chunked(big))  # fmt: skip
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    # multipart: many small fields (none over the parser's part limit), read by the endpoint
    field = b'--XX\r\nContent-Disposition: form-data; name="f"\r\n\r\n' + b"a" * 60000 + b"\r\n"
    mp_head = head % b"/presets/edit" + b"Content-Type: multipart/form-data; boundary=XX\r\n"
    answer = _raw(server, mp_head + cookie + b"X-CSRF-Token: " + CSRF.encode() + b"\r\n\r\n",
                  _chunked([field] * 40))  # fmt: skip
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert "Traceback" not in server.tail(400) and "Exception in ASGI" not in server.tail(400)
    assert httpx.get(server.url + "/").status_code == 200  # and the server goes on


def test_parallel_login_guesses_are_checked_one_at_a_time(tmp_path: Path) -> None:
    with serve(
        tmp_path / "results",
        tmp_path / "serve.log",
        extra=["--token-env", "GB_WEB_TOKEN"],
        env={"GB_WEB_TOKEN": TOKEN},
    ) as s:
        user = httpx.Client(base_url=s.url)  # a session from before the guessing
        csrf = csrf_of(user.get("/login").text)
        assert user.post("/login", data={"csrf": csrf, "token": TOKEN}).status_code == 303

        def guess(ready: threading.Barrier | None) -> int:
            with httpx.Client(base_url=s.url, timeout=60) as c:
                csrf = csrf_of(c.get("/login").text)
                if ready is not None:
                    ready.wait(timeout=60)  # all 16 guesses leave together
                return c.post("/login", data={"csrf": csrf, "token": "wrong"}).status_code

        assert [guess(None) for _ in range(5)] == [401] * 5  # the next one waits 4 s
        ready = threading.Barrier(16)
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(guess, [ready] * 16))
        # one guess was checked; the others were refused at once rather than all waiting
        # out the same delay together
        assert sorted(codes) == [401] + [429] * 15, codes
        assert user.get("/").status_code == 200  # the session is never slowed or refused
        user.close()
        with httpx.Client(base_url=s.url, timeout=60) as c:  # the token still gets in
            csrf = csrf_of(c.get("/login").text)
            assert c.post("/login", data={"csrf": csrf, "token": TOKEN}).status_code == 303


def test_the_login_throttle_ignores_x_forwarded_for(tmp_path: Path) -> None:
    with serve(
        tmp_path / "results",
        tmp_path / "serve.log",
        extra=["--token-env", "GB_WEB_TOKEN"],
        env={"GB_WEB_TOKEN": TOKEN},
    ) as s:

        def guess(n: int, ready: threading.Barrier | None) -> int:
            xff = {"X-Forwarded-For": f"203.0.113.{n}"}  # a new "address" every time
            with httpx.Client(base_url=s.url, timeout=60, headers=xff) as c:
                csrf = csrf_of(c.get("/login").text)
                if ready is not None:
                    ready.wait(timeout=60)
                return c.post("/login", data={"csrf": csrf, "token": "wrong"}).status_code

        assert [guess(n, None) for n in range(5)] == [401] * 5
        ready = threading.Barrier(8)
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(guess, range(10, 18), [ready] * 8))
        # one socket peer: one guess is checked (after its wait), the others are refused
        assert sorted(codes) == [401] + [429] * 7, codes


def test_secret_finder_catches_headers_flags_and_token_values() -> None:
    from gridbench.jobflow.web.literal_secrets import find_secrets, redact

    spec = {
        "job": {"command": ["curl", "-H", "Authorization: Bearer abcdef123", "http://h"]},
        "hook": 'curl -H "Authorization: Bearer abcdef123" http://h',
        "ssh": ["sshpass", "-p", "hunter2", "scp", "a", "h:b"],
        "ssh_line": "sshpass -p hunter2 scp a h:b",
        "db": ["mysql", "-uroot", "-phunter2", "bench"],
        "env_argv": ["env", "GITHUB_TOKEN=abc123", "run"],
        "env": {
            "JWT_HOLDER": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
            "GH": "ghp_" + "A1" * 18,
            "H": "Bearer abcdef123",
        },
    }
    assert sorted(find_secrets(spec)) == sorted(
        [
            "job.command.2",
            "hook",
            "ssh.2",
            "ssh_line",
            "db.2",
            "env_argv.1",
            "env.JWT_HOLDER",
            "env.GH",
            "env.H",
        ]
    )
    assert redact(spec)["ssh"] == ["sshpass", "-p", "<redacted>", "scp", "a", "h:b"]
    fine = {
        "a": ["mkdir", "-p", "/tmp/x"],
        "b": ["ssh", "-p2222", "h"],
        "c": ["mysql", "-p", "bench"],  # -p X prompts; X is the database
        "d": ["sshpass", "-p", "{password}", "scp"],
        "e": "a basic test of the bearer of news",
        "f": ["env", "GITHUB_TOKEN=$GH", "PATH=/bin"],
        "g": "Authorization: Bearer {token}",
    }
    assert find_secrets(fine) == []


def test_a_form_part_over_the_parser_s_limit_is_400_not_500(tmp_path: Path) -> None:
    """Starlette refuses a form part over 1 MiB while the CSRF check reads the form: that
    is a bad request (400, one line), never a 500 with a traceback in the log."""
    with serve(
        tmp_path / "results",
        tmp_path / "serve.log",
        extra=["--token-env", "GB_WEB_TOKEN"],
        env={"GB_WEB_TOKEN": TOKEN},
    ) as s:
        with httpx.Client(base_url=s.url, timeout=60) as c:
            csrf = csrf_of(c.get("/login").text)
            assert c.post("/login", data={"csrf": csrf, "token": TOKEN}).status_code == 303
            for path in ("/new", "/start", "/presets/edit", "/login"):
                files = {"spec": (None, "a" * 1_500_000)}
                r = c.post(path, data={"csrf": csrf}, files=files)
                assert r.status_code in (400, 413), (path, r.status_code, r.text[:200])
        assert "Traceback" not in s.tail(400), s.tail(60)
