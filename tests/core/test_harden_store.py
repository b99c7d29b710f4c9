"""The results store is foreign input (issue 15, items 2 and 3): no link is followed, reads
are bounded and validated, and a bad run is listed as "unreadable: <reason>" while the
rest of the store keeps working, in the CLI and on the dashboard."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import BIN, cli_env
from test_net_analysis import make_run, ping, sockperf
from web_server import Server, serve

SECRET = "root:x:0:0:planted-secret-outside-the-run\n"
MINE = "description: mine\nbackend: {type: command, options: {preset: slurm}}\n"

#: Hostile experiment.json contents by name, and the reason each is listed with.
HOSTILE: dict[str, tuple[bytes, str]] = {
    "huge-int": (b'{"name": "h", "trials_done": ' + b"9" * 5000 + b"}", "not valid JSON"),
    "deep": (b"[" * 200_000 + b"]" * 200_000, "nested deeper than"),
    "nan": (b'{"name": "n", "created": NaN}', "NaN is not a JSON number"),
    "empty": (b"", "empty"),
    "list": (b"[1, 2]", "not a JSON object"),
    "latin1": ('{"name": "caf\xe9"}'.encode("latin-1"), "not UTF-8 text"),
    "created-int": (b'{"name": "c", "created": 5}', "'created' is not a string"),
    "pid-str": (b'{"name": "p", "kind": "net", "pid": "123"}', "'pid' is not an integer"),
}


#: Valid JSON in an ASCII file whose name escapes a lone surrogate: readable, shown with
#: U+FFFD in its place (it once made the list, compare and history pages answer 500).
SURROGATE = b'{"name": "s\\ud800x", "kind": "net", "status": "done", "created": "2020-01-01"}'


def gb(*args: str, results: Path) -> subprocess.CompletedProcess[str]:
    """The CLI as a subprocess; never a traceback or an internal error."""
    p = subprocess.run(
        [str(BIN), *args], env=cli_env(results), capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert "internal error" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def good_run(root: Path) -> Path:
    """A small real net run (records only; analysed by the tests that need it)."""
    records = [ping("tcp", "host", 64, 0, [0.1, 0.2]), sockperf("host", 64, 0.05)]
    return make_run(root, records).path


def hostile_run(root: Path, name: str, content: bytes) -> Path:
    run = root / f"20200101T000000Z-{name}"
    run.mkdir(parents=True)
    (run / "experiment.json").write_bytes(content)
    return run


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One good run, one run per hostile experiment.json, a run whose experiment.json is a
    link outside it, and a run folder that is itself a link."""
    tmp = tmp_path_factory.mktemp("store")
    root = tmp / "results"
    root.mkdir()
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "experiment.json").write_text('{"name": "elsewhere", "created": "2030"}')
    good = good_run(root)
    for name, (content, _) in HOSTILE.items():
        hostile_run(root, name, content)
    hostile_run(root, "surrogate", SURROGATE)
    linked = root / "20200101T000000Z-linked-file"
    linked.mkdir()
    (linked / "experiment.json").symlink_to(outside / "experiment.json")
    (root / "20300101T000000Z-linked-folder").symlink_to(outside, target_is_directory=True)
    return {"root": root, "good": good, "outside": outside, "tmp": tmp}


def test_list_shows_each_bad_run_as_unreadable_and_the_rest_as_before(
    store: dict[str, Path],
) -> None:
    p = gb("list", "--json", results=store["root"])
    assert p.returncode == 0, p.stderr
    rows = {r["id"]: r for r in json.loads(p.stdout)}
    good = rows.pop(store["good"].name)
    assert (
        good["name"] == "nettest" and good["status"] == "complete" and good["kind"] == "net"
    )  # "done": an old word
    assert "20300101T000000Z-linked-folder" not in rows  # a linked run folder is not a run
    for name, (_, reason) in HOSTILE.items():
        row = rows[f"20200101T000000Z-{name}"]
        assert row["status"].startswith("unreadable: "), row
        assert reason in row["status"], (name, row)
    linked = rows["20200101T000000Z-linked-file"]
    assert linked["status"].startswith("unreadable: ") and "symbolic link" in linked["status"]
    assert "elsewhere" not in p.stdout  # the linked file was not read


def test_list_table_keeps_working(store: dict[str, Path]) -> None:
    p = gb("list", results=store["root"])
    assert p.returncode == 0, p.stderr
    assert "unreadable" in p.stdout and "nettest" in p.stdout


@pytest.mark.parametrize("name", ["huge-int", "deep", "latin1", "linked-file"])
def test_show_of_a_bad_run_is_one_clear_error(store: dict[str, Path], name: str) -> None:
    p = gb("show", f"20200101T000000Z-{name}", results=store["root"])
    assert p.returncode == 2, p.stdout + p.stderr
    assert "error" in p.stderr and "experiment.json" in p.stderr, p.stderr


@pytest.fixture
def net_copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A fresh net run, its root, and a folder outside the run holding a secret file."""
    root = tmp_path / "results"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(SECRET)
    return root, good_run(root), outside


def test_a_linked_spec_is_never_written_into_the_report(net_copy: tuple[Path, Path, Path]) -> None:
    root, run, outside = net_copy
    (run / "spec.yaml").unlink()
    (run / "spec.yaml").symlink_to(outside / "passwd")
    p = gb("report", str(run), results=root)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "spec.yaml" in p.stderr and "symbolic link" in p.stderr, p.stderr
    html = run / "report.html"
    assert not html.exists() or "planted-secret" not in html.read_text()


def test_record_files_are_read_without_links_and_checked(tmp_path: Path) -> None:
    from gridbench.errors import ResultsError
    from gridbench.store.records import append_record, read_records

    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"secret": 1}\n')
    run = tmp_path / "run"
    run.mkdir()
    (run / "experiment.json").write_text("{}")
    rows = run / "rows.jsonl"
    rows.symlink_to(outside)
    with pytest.raises(ResultsError, match="symbolic link") as exc:
        read_records(rows)
    assert exc.value.where == str(rows)
    with pytest.raises(ResultsError, match="symbolic link"):
        append_record(rows, {"x": 1})
    assert outside.read_text() == '{"secret": 1}\n'
    rows.unlink()
    rows.write_text('{"ok": 1}\n{"n": ' + "9" * 5000 + "}\n")
    with pytest.raises(ResultsError, match="not valid JSON") as exc:
        read_records(rows)
    assert exc.value.where == f"{rows}:2"


def test_analyze_never_writes_through_a_tables_link(net_copy: tuple[Path, Path, Path]) -> None:
    root, run, outside = net_copy
    (run / "tables").symlink_to(outside, target_is_directory=True)
    p = gb("analyze", str(run), results=root)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "tables" in p.stderr and "symbolic link" in p.stderr, p.stderr
    assert sorted(x.name for x in outside.iterdir()) == ["passwd"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"schema": "gridbench.net/1", "n": ' + b"7" * 5000 + b"}", "not valid JSON"),
        (b"{" * 1000 + b"}" * 1000, "not valid JSON"),
        (b'{"schema": "gridbench.net/1", "x": Infinity}', "Infinity is not a JSON number"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"", "empty"),
    ],
)
def test_show_of_hostile_metrics_is_one_clear_error(
    net_copy: tuple[Path, Path, Path],
    content: bytes,
    reason: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, run, _ = net_copy
    (run / "metrics.json").write_bytes(content)
    from gridbench.cli import main

    # in-process (fast); the subprocess tests above cover the real entry point
    assert main(["show", str(run), "--results", str(root)]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "metrics.json" in err, err
    assert reason in " ".join(err.split()), err


def test_an_oversized_file_is_refused_with_its_cap(tmp_path: Path) -> None:
    from gridbench.errors import ResultsError
    from gridbench.store.layout import RunDir

    run = RunDir.create(tmp_path, "big")
    run.experiment_file.write_bytes(b'{"pad": "' + b"x" * (5 * 1024 * 1024) + b'"}')
    with pytest.raises(ResultsError, match="larger than the 4096 KiB"):
        run.read_experiment()


def test_a_fifo_is_not_opened_for_reading(tmp_path: Path) -> None:
    from gridbench.errors import ResultsError
    from gridbench.store.layout import RunDir

    run = RunDir.create(tmp_path, "fifo")
    os.mkfifo(run.experiment_file)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            run.read_experiment()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # a blocking open: release it (a writer arrives), then fail
        os.close(os.open(run.experiment_file, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("reading a planted FIFO blocked")
    assert isinstance(outcome[0], ResultsError) and "not a regular file" in str(outcome[0])


# -- the dashboard --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(store: dict[str, Path]) -> Iterator[Server]:
    with serve(store["root"], store["tmp"] / "serve.log") as s:
        yield s


def get(server: Server, path: str, **params: Any) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.get(path, params=params)
    assert r.status_code == 200, (path, r.status_code, server.tail())
    return r


def test_dashboard_list_shows_bad_runs_and_the_rest(store: dict[str, Path], server: Server) -> None:
    r = get(server, "/")
    assert f'data-id="{store["good"].name}"' in r.text and "nettest" in r.text
    assert 'data-id="20200101T000000Z-huge-int"' in r.text
    assert "unreadable: " in r.text and "&#39;created&#39; is not a string" in r.text
    assert "linked-folder" not in r.text and "elsewhere" not in r.text


def test_a_lone_surrogate_is_shown_replaced_everywhere(
    store: dict[str, Path], server: Server
) -> None:
    p = gb("list", "--json", results=store["root"])
    assert p.returncode == 0, p.stderr
    rows = {r["id"]: r for r in json.loads(p.stdout)}
    assert rows["20200101T000000Z-surrogate"]["name"] == "s\ufffdx"
    p = gb("list", results=store["root"])
    assert p.returncode == 0 and "s\ufffdx" in p.stdout, p.stderr
    p = gb("show", "20200101T000000Z-surrogate", results=store["root"])
    assert p.returncode == 0, p.stderr
    assert "s\\ufffdx" in p.stdout  # the record as JSON, escaped
    good = store["good"].name
    assert "s\ufffdx" in get(server, "/").text
    get(server, "/compare", ids=[good, "20200101T000000Z-surrogate"])
    get(server, "/history", experiment=good)
    get(server, "/history", experiment="20200101T000000Z-surrogate")


def test_dashboard_compare_and_history_survive_bad_runs(
    store: dict[str, Path], server: Server
) -> None:
    good = store["good"].name
    r = get(server, "/compare", ids=[good, "20200101T000000Z-huge-int"])
    assert 'id="compare-error"' in r.text and "not valid JSON" in r.text
    r = get(server, "/history", experiment="20200101T000000Z-deep", metric="x")
    assert good in r.text  # the rest of the store is offered
    r = get(server, "/history", experiment=good)
    assert "20200101T000000Z-nan" in r.text


def test_a_linked_saved_preset_is_neither_listed_nor_read(tmp_path: Path) -> None:
    from gridbench.jobflow.web.presets import read_saved_preset, saved_dir, saved_presets

    root = tmp_path / "results"
    presets = saved_dir(root)
    presets.mkdir(parents=True)
    outside = tmp_path / "passwd.yaml"
    outside.write_text(MINE.replace("mine", "planted"))
    (presets / "mine.yaml").write_text(MINE)
    (presets / "planted.yaml").symlink_to(outside)
    assert [p.key for p in saved_presets(root)] == ["saved:mine"]
    from gridbench.errors import ResultsError

    with pytest.raises(ResultsError, match="symbolic link"):
        read_saved_preset(root, "planted")
    assert read_saved_preset(root, "mine") == MINE
    assert read_saved_preset(root, "../passwd") is None


def test_a_linked_event_log_is_not_read(tmp_path: Path) -> None:
    """Job flow's event logs are read by polars from the open file itself: a trial's
    events.arrows planted as a link to another file is refused, not analysed."""
    root = tmp_path / "results"
    spec = tmp_path / "noop.yaml"
    spec.write_text(
        "name: linked-events\nbackend: {type: noop}\n"
        "load: {model: batch, jobs: 5, submitters: 1}\ntrials: 1\n",
        encoding="utf-8",
    )
    assert gb("run", str(spec), results=root).returncode == 0
    run = next(p for p in root.iterdir() if p.is_dir())
    events = next(run.glob("trials/*/events.arrows"))
    outside = tmp_path / "outside.arrows"
    outside.write_bytes(events.read_bytes())
    events.unlink()
    events.symlink_to(outside)
    p = gb("analyze", str(run), results=root)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "link" in p.stderr and "events.arrows" in p.stderr, p.stderr
