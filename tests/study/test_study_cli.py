"""``gridbench study validate|plan|import|serve|report`` end to end, through the installed
command: spec errors with their line and fix, the counterbalanced plan, an imported study
that the generic ``list``, ``show`` and ``analyze`` handle, and ``serve``'s personal links
(printed once, kept only as hashes, working in the live server)."""

from __future__ import annotations

import csv
import hashlib
import json
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import BIN, cli_env
from gridbench.study.records import FreeText, LinkIssued, LinkRevoked, append, now_ns, read_log

EXAMPLES = Path(__file__).parents[2] / "examples"
AHE = EXAMPLES / "study-ahe.yaml"
RESPONSES = EXAMPLES / "study-responses.csv"


def gridbench(results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=300
    )


def flat(text: str) -> str:
    """Terminal output with its wrapping undone."""
    return " ".join(text.split())


# -- validate ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["study-ahe.yaml", "study-import.yaml"])
def test_the_examples_validate(tmp_path: Path, name: str) -> None:
    p = gridbench(tmp_path, "study", "validate", str(EXAMPLES / name))
    assert p.returncode == 0, p.stderr
    assert f"{name} is a valid study spec" in flat(p.stdout)


def test_validate_summarises_the_study(tmp_path: Path) -> None:
    p = gridbench(tmp_path, "study", "validate", str(AHE))
    out = flat(p.stdout)
    assert "(4 tools, 12 timed tasks per participant, 8 participants, 2 comparisons)" in out
    assert "tool ahe_gui: AHE graphical client (2.0); tasks launch, monitor, download" in out
    assert "compare ahe_cli vs globus_cli (ahe_cli better): sus, time, failure" in out


def bad_spec(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """The AHE example with ``old`` replaced; the 1-based line of the change."""
    text = AHE.read_text()
    assert old in text
    line = text[: text.index(old)].count("\n") + 1
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(old, new, 1))
    return path, line


def test_an_unknown_key_names_its_line_and_the_fix(tmp_path: Path) -> None:
    path, line = bad_spec(tmp_path, "order:\n", "ordering: {}\norder:\n")
    p = gridbench(tmp_path, "study", "validate", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    err = flat(p.stderr)
    assert f"{path}:{line}: field 'ordering'" in err
    assert "fix:" in err


def test_a_comparison_naming_an_unknown_tool_is_refused(tmp_path: Path) -> None:
    path, _ = bad_spec(tmp_path, "{a: ahe_gui, b: unicore_gui", "{a: ahe_gui, b: unicore_rich")
    p = gridbench(tmp_path, "study", "validate", str(path))
    assert p.returncode == 2
    err = flat(p.stderr)
    assert "comparison names tool 'unicore_rich', which is not one of globus_cli" in err
    assert f"{path}:" in err


def test_set_overrides_and_a_bad_mapping(tmp_path: Path) -> None:
    p = gridbench(tmp_path, "study", "validate", str(AHE), "--set", "analysis.alpha=2")
    assert p.returncode == 2 and "--set analysis.alpha" in flat(p.stderr)
    path, _ = bad_spec(tmp_path, "plan:\n", "import: {columns: {sus11: Q11}}\nplan:\n")
    p = gridbench(tmp_path, "study", "validate", str(path))
    assert p.returncode == 2
    assert "import.columns.sus11: import.columns maps 'sus11'" in flat(p.stderr)


# -- plan ----------------------------------------------------------------------------------


def test_plan_shows_the_test_plan_and_the_square(tmp_path: Path) -> None:
    p = gridbench(tmp_path, "study", "plan", str(AHE))
    assert p.returncode == 0, p.stderr
    out = flat(p.stdout)
    assert "test plan: ahe-usability" in out and "obtaining a certificate" in out
    assert "balanced Latin square (Williams), 4 rows" in out
    assert "P01 │ 0 │ globus_cli -> ahe_cli -> ahe_gui -> unicore_gui" in out
    assert "P05 │ 0 │ globus_cli -> ahe_cli -> ahe_gui -> unicore_gui" in out


def test_plan_json_is_a_balanced_square(tmp_path: Path) -> None:
    p = gridbench(tmp_path, "study", "plan", str(AHE), "--json")
    doc = json.loads(p.stdout)
    square = doc["square"]
    tools = doc["tools"]
    assert len(square) == 4 and sorted(tools) == sorted(square[0])
    for pos in range(4):  # each tool once in each position
        assert sorted(row[pos] for row in square) == sorted(tools)
    pairs = [(row[i], row[i + 1]) for row in square for i in range(3)]
    assert len(set(pairs)) == len(pairs) == 12  # each ordered pair adjacent exactly once
    people = doc["participants"]
    assert [p["participant"] for p in people] == [f"P0{i}" for i in range(1, 9)]
    assert [p["square_row"] for p in people] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert all(p["tools"] == square[p["square_row"]] for p in people)


# -- import, and the generic commands over the run ------------------------------------------


def sus_means() -> dict[str, float]:
    """Mean SUS per tool, scored by hand from the example CSV."""
    scores: dict[str, list[float]] = {}
    with RESPONSES.open(newline="") as fh:
        for row in csv.DictReader(fh):
            items = [int(row[f"sus{i}"]) for i in range(1, 11)]
            total = sum(v - 1 for v in items[0::2]) + sum(5 - v for v in items[1::2])
            scores.setdefault(row["tool"], []).append(total * 2.5)
    return {tool: sum(v) / len(v) for tool, v in scores.items()}


def test_import_makes_a_run_that_list_show_and_analyze_handle(tmp_path: Path) -> None:
    results = tmp_path / "results"
    p = gridbench(results, "study", "import", str(AHE), "--responses", str(RESPONSES))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (
        "imported 320 records (8 participants, 32 rows: 96 likert, 96 observation, 32 sus, "
        "96 task_time)" in flat(p.stdout)
    )
    (run,) = results.iterdir()
    exp = json.loads((run / "experiment.json").read_text())
    assert exp["kind"] == "study" and exp["status"] == "complete"
    assert exp["delivery"] == "import" and exp["participants"] == 8
    assert exp["tools"] == ["globus_cli", "ahe_cli", "unicore_gui", "ahe_gui"]
    assert exp["id"] == run.name and exp["imported"]["rows"] == 32
    assert "\nname: ahe-usability\n" in (run / "spec.yaml").read_text()
    assert len(read_log(run)) == 320

    listed = gridbench(results, "list")
    assert listed.returncode == 0
    assert "study (import)" in flat(listed.stdout) and "ahe-usability" in flat(listed.stdout)
    shown = gridbench(results, "show", run.name)
    assert shown.returncode == 0 and '"delivery": "import"' in shown.stdout

    analyzed = gridbench(results, "analyze", run.name, "--json")
    assert analyzed.returncode == 0, analyzed.stderr
    metrics = json.loads(analyzed.stdout)
    assert metrics["schema"] == "gridbench.study/1"
    for tool, mean in sus_means().items():
        assert metrics["tools"][tool]["sus"]["mean"] == pytest.approx(mean)
        assert metrics["tools"][tool]["sus"]["n"] == 8
    pairs = {(c["a"], c["b"]) for c in metrics["comparisons"]}
    assert pairs == {("ahe_cli", "globus_cli"), ("ahe_gui", "unicore_gui")}
    assert metrics["power"]["n_required"] >= 2

    report = gridbench(results, "study", "report", "latest")
    assert report.returncode == 0, report.stderr
    assert (run / "metrics.json").is_file()


def test_report_can_drop_the_free_text_of_a_run_and_bring_it_back(tmp_path: Path) -> None:
    results = tmp_path / "results"
    assert (
        gridbench(results, "study", "import", str(AHE), "--responses", str(RESPONSES)).returncode
        == 0
    )
    (run,) = results.iterdir()
    secret = "mentions my colleague Ann by name"
    append(run, FreeText(t_ns=now_ns(), participant="P01", answers={"comments": secret}))
    kept = gridbench(results, "study", "report", run.name)
    assert kept.returncode == 0, kept.stderr
    assert secret in (run / "report.html").read_text(encoding="utf-8")
    dropped = gridbench(results, "study", "report", run.name, "--free-text", "drop")
    assert dropped.returncode == 0, dropped.stderr
    for name in ("report.html", "report.json"):
        assert secret not in (run / name).read_text(encoding="utf-8"), name
    assert secret in (run / "metrics.json").read_text(encoding="utf-8")  # the run's record
    assert gridbench(results, "report", run.name).returncode == 0  # remembered by the run
    assert secret not in (run / "report.html").read_text(encoding="utf-8")
    assert gridbench(results, "study", "report", run.name, "--free-text", "keep").returncode == 0
    assert secret in (run / "report.html").read_text(encoding="utf-8")


def test_import_with_a_mapping_and_the_install_survey(tmp_path: Path) -> None:
    results = tmp_path / "results"
    p = gridbench(
        results,
        "study",
        "import",
        str(EXAMPLES / "study-import.yaml"),
        "--responses",
        str(EXAMPLES / "study-export.csv"),
        "--survey",
        str(EXAMPLES / "study-install.csv"),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "column Response ID is not part of the layout" in flat(p.stderr)
    (run,) = results.iterdir()
    exp = json.loads((run / "experiment.json").read_text())
    assert exp["participants"] == 6  # none declared: counted from the export
    types = [r.type for r in read_log(run)]
    assert types.count("sus") == 12 and types.count("install_rating") == 4 * 5 * 7
    assert types.count("complaint") == 4


# -- serve ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """``gridbench study serve`` as a subprocess; its stdout lines arrive in a queue."""

    def __init__(self, results: Path, *args: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [str(BIN), "study", "serve", *args, "--port", str(self.port)],
            env=cli_env(results),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        out = self.proc.stdout

        def pump() -> None:
            for line in out:
                self.lines.put(line)

        threading.Thread(target=pump, daemon=True).start()

    def read_until(self, marker: str, timeout: float = 60) -> list[str]:
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while not any(marker in x for x in got):
            try:
                got.append(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""  # type: ignore[union-attr]
                raise AssertionError(f"no {marker!r} in {got}; stderr: {err}") from None
        return got

    def get(self, path: str) -> httpx.Response:
        deadline = time.monotonic() + 60
        while True:
            try:
                return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=10)
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def serving() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for s in started:
        s.stop()


LINK = re.compile(r"^\s+(P\d\d)\s+http://127\.0\.0\.1:(\d+)/p/([^/\s]+)/([A-Za-z0-9_-]+)$")


def links_of(lines: list[str]) -> dict[str, tuple[str, str]]:
    """participant -> (run id, secret) from the printed links."""
    found = {}
    for line in lines:
        m = LINK.match(line.rstrip("\n"))
        if m:
            found[m.group(1)] = (m.group(3), m.group(4))
    return found


def test_serve_prints_each_link_once_and_stores_only_its_hash(
    tmp_path: Path, serving: list[Server]
) -> None:
    results = tmp_path / "results"
    server = Server(results, str(AHE))
    serving.append(server)
    lines = server.read_until("observer page:")
    links = links_of(lines)
    assert sorted(links) == [f"P0{i}" for i in range(1, 9)]
    (run,) = results.iterdir()
    assert {rid for rid, _ in links.values()} == {run.name}
    text = "".join(lines)
    assert f"http://127.0.0.1:{server.port}/studies/{run.name}\n" in text
    assert f"http://127.0.0.1:{server.port}/studies/{run.name}/observer\n" in text
    exp = json.loads((run / "experiment.json").read_text())
    assert (exp["kind"], exp["delivery"], exp["status"]) == ("study", "browser", "running")
    assert exp["participants"] == 8

    issued = {r.participant: r.link_hash for r in read_log(run) if isinstance(r, LinkIssued)}
    assert issued == {
        who: hashlib.sha256(secret.encode()).hexdigest() for who, (_, secret) in links.items()
    }
    rid, secret = links["P03"]
    page = server.get(f"/p/{rid}/{secret}")
    assert page.status_code == 200
    assert "We compare how easy four grid middleware clients are" in page.text
    forged = server.get(f"/p/{rid}/{secret[:-2]}xx")
    assert forged.status_code == 404
    server.stop()
    assert server.proc.stderr is not None
    err = server.proc.stderr.read()
    assert not any(s in err for _, s in links.values())  # nor in the server's own output
    assert all("".join(lines).count(s) == 1 for _, s in links.values())  # each printed once
    # no secret in any file of the run (the log, experiment.json, spec.yaml ...)
    for path in run.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(s.encode() in data for _, s in links.values()), path


def test_serve_run_reopens_and_new_links_revoke_the_old(
    tmp_path: Path, serving: list[Server]
) -> None:
    results = tmp_path / "results"
    first = Server(results, str(AHE))
    serving.append(first)
    old = links_of(first.read_until("observer page:"))
    rid, secret = old["P01"]
    assert first.get(f"/p/{rid}/{secret}").status_code == 200
    first.stop()

    again = Server(results, "--run", "latest")
    serving.append(again)
    lines = again.read_until("observer page:")
    assert links_of(lines) == {} and "the links issued before keep working" in "".join(lines)
    assert again.get(f"/p/{rid}/{secret}").status_code == 200
    again.stop()

    renewed = Server(results, "--run", rid, "--new-links")
    serving.append(renewed)
    new = links_of(renewed.read_until("observer page:"))
    assert sorted(new) == sorted(old) and all(new[p][1] != old[p][1] for p in old)
    assert renewed.get(f"/p/{rid}/{secret}").status_code == 404
    assert renewed.get(f"/p/{rid}/{new['P01'][1]}").status_code == 200
    log = read_log(results / rid)
    assert sum(isinstance(r, LinkIssued) for r in log) == 16
    assert not any(isinstance(r, LinkRevoked) for r in log)  # a new link replaces the old


def test_serve_refuses_what_it_cannot_deliver(tmp_path: Path) -> None:
    results = tmp_path / "results"
    no_people = tmp_path / "none.yaml"
    no_people.write_text(AHE.read_text().replace("participants: [P01", "# [P01"))
    p = gridbench(results, "study", "serve", str(no_people), "--port", str(free_port()))
    assert p.returncode == 2 and "needs its participants declared" in flat(p.stderr)
    p = gridbench(results, "study", "serve", "--port", str(free_port()))
    assert p.returncode == 2 and "give a study spec or --run RUN" in flat(p.stderr)
    p = gridbench(results, "study", "serve", str(AHE), "--new-links", "--port", str(free_port()))
    assert p.returncode == 2 and "use it with --run RUN" in flat(p.stderr)
    p = gridbench(results, "study", "serve", "--run", "x", "--set", "name=y")
    assert p.returncode == 2 and "keeps the spec it was started with" in flat(p.stderr)
    p = gridbench(results, "study", "serve", str(AHE), "--host", "0.0.0.0")
    assert p.returncode == 2 and "without an access token" in flat(p.stderr)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = gridbench(results, "study", "serve", str(AHE), "--port", str(port))
    assert p.returncode == 2 and "cannot listen on 127.0.0.1" in flat(p.stderr)
    assert not results.exists() or not any(results.iterdir())  # no run made for nothing
    imported = gridbench(results, "study", "import", str(AHE), "--responses", str(RESPONSES))
    assert imported.returncode == 0
    p = gridbench(results, "study", "serve", "--run", "latest", "--port", str(free_port()))
    assert p.returncode == 2 and "not a study delivered in the browser" in flat(p.stderr)
